#ifndef HVD_TEST_UNIT_TIMELINE_TEST_FILES_H_
#define HVD_TEST_UNIT_TIMELINE_TEST_FILES_H_

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace hvd::timeline::testing {

// A per-test scratch directory, removed afterwards.
class TempDirTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = std::filesystem::temp_directory_path() /
           (std::string("hvd_timeline_") + info->test_suite_name() + "_" + info->name() + "_" +
            std::to_string(::getpid()));
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream(path) << content;
}

// Parses `path`; fails the test (and returns null) if it is not valid JSON.
inline nlohmann::json ParseFile(const std::string& path) {
  nlohmann::json j = nlohmann::json::parse(ReadFile(path), nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << path << " is not valid JSON";
  return j;
}

}  // namespace hvd::timeline::testing

#endif  // HVD_TEST_UNIT_TIMELINE_TEST_FILES_H_
