#include "launcher/worker/runtime_library.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace hvd::launcher {
namespace {

namespace fs = std::filesystem;

class RuntimeLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("hvd_runtime_library_test_" + std::to_string(getpid()));
    fs::create_directories(root_ / "cmd");
    fs::create_directories(root_ / "runtime");
    fs::create_directories(root_ / "bin");
    fs::create_directories(root_ / "lib");
  }
  void TearDown() override { fs::remove_all(root_); }
  void Touch(const fs::path& path) { std::ofstream(path) << "x"; }
  fs::path root_;
};

TEST_F(RuntimeLibraryTest, FindsTheBuildTreeLibrary) {
  Touch(root_ / "runtime" / "libhvd.so");
  EXPECT_EQ(FindRuntimeLibrary((root_ / "cmd" / "hvdrun").string()),
            fs::canonical(root_ / "runtime" / "libhvd.so").string());
}

TEST_F(RuntimeLibraryTest, FindsTheInstalledLibrary) {
  Touch(root_ / "lib" / "libhvd.so");
  EXPECT_EQ(FindRuntimeLibrary((root_ / "bin" / "hvdrun").string()),
            fs::canonical(root_ / "lib" / "libhvd.so").string());
}

TEST_F(RuntimeLibraryTest, NothingBuiltMeansNoLibrary) {
  EXPECT_FALSE(FindRuntimeLibrary((root_ / "cmd" / "hvdrun").string()).has_value());
  EXPECT_FALSE(FindRuntimeLibrary("").has_value());
}

TEST_F(RuntimeLibraryTest, FindsThePythonPackageOfTheBuildTreeBeforeAnInstalledOne) {
  EXPECT_FALSE(FindPythonPackage((root_ / "cmd" / "hvdrun").string()).has_value());
  fs::create_directories(root_ / "lib" / "python3.11" / "dist-packages" / "hvd");
  Touch(root_ / "lib" / "python3.11" / "dist-packages" / "hvd" / "__init__.py");
  fs::create_directories(root_ / "lib" / "python3.12" / "site-packages" / "hvd");  // no __init__
  std::optional<PythonPackage> installed = FindPythonPackage((root_ / "bin" / "hvdrun").string());
  ASSERT_TRUE(installed.has_value());
  EXPECT_EQ(installed->dir, fs::canonical(root_ / "lib" / "python3.11" / "dist-packages").string());
  EXPECT_FALSE(installed->build_tree);
  fs::create_directories(root_ / "python" / "hvd");
  Touch(root_ / "python" / "hvd" / "__init__.py");
  std::optional<PythonPackage> built = FindPythonPackage((root_ / "cmd" / "hvdrun").string());
  ASSERT_TRUE(built.has_value());
  EXPECT_EQ(built->dir, fs::canonical(root_ / "python").string());
  EXPECT_TRUE(built->build_tree);
  EXPECT_FALSE(FindPythonPackage("").has_value());
}

TEST(SelfExecutablePathTest, IsAbsolute) { EXPECT_EQ(SelfExecutablePath().front(), '/'); }

}  // namespace
}  // namespace hvd::launcher
