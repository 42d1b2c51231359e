// Runs every file of test/fuzz/corpus/<target>/ and test/fuzz/regressions/<target>/ through
// its target's entry (the body libFuzzer calls), in the normal build: no input may crash or
// take long, and each regression input still gets the error its fix gives it. A regression
// input `<name>` comes with `<name>.expect`, a line its outcome must contain; an empty one: the
// input must now go through without any error (the outcome is empty).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

namespace fs = std::filesystem;

// Far above what any input takes (milliseconds), far below a hang.
constexpr auto kMaxPerInput = std::chrono::seconds(10);

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<fs::path> Inputs(const fs::path& dir) {
  std::vector<fs::path> files;
  if (!fs::is_directory(dir)) return files;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() != ".expect") {
      files.push_back(entry.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// Runs one input; fails the test when it takes too long. Returns the outcome.
std::string RunOne(const Target& target, const fs::path& file) {
  const std::string input = ReadFile(file);
  auto start = std::chrono::steady_clock::now();
  std::string outcome = target.run(input);
  auto took = std::chrono::steady_clock::now() - start;
  EXPECT_LT(took, kMaxPerInput) << file << " took " << std::chrono::duration<double>(took).count()
                                << " s";
  return outcome;
}

class FuzzCorpus : public testing::TestWithParam<Target> {};

TEST_P(FuzzCorpus, EveryCorpusInputRuns) {
  const Target& target = GetParam();
  std::vector<fs::path> files = Inputs(fs::path(HVD_FUZZ_DIR) / "corpus" / target.name);
  ASSERT_FALSE(files.empty()) << "no seed corpus for target " << target.name;
  for (const fs::path& file : files) RunOne(target, file);
}

TEST_P(FuzzCorpus, EveryRegressionInputGetsItsError) {
  const Target& target = GetParam();
  for (const fs::path& file : Inputs(fs::path(HVD_FUZZ_DIR) / "regressions" / target.name)) {
    fs::path expect_file = file;
    expect_file += ".expect";
    ASSERT_TRUE(fs::exists(expect_file)) << "regression input " << file << " has no .expect";
    std::string expect = ReadFile(expect_file);
    while (!expect.empty() && expect.back() == '\n') expect.pop_back();
    std::string outcome = RunOne(target, file);
    if (expect.empty()) {
      EXPECT_EQ(outcome, "") << file << ": expected no error (its .expect is empty)";
      continue;
    }
    EXPECT_NE(outcome.find(expect), std::string::npos)
        << file << ": expected the outcome to contain '" << expect << "', got:\n"
        << outcome;
  }
}

INSTANTIATE_TEST_SUITE_P(Targets, FuzzCorpus, testing::ValuesIn(kTargets),
                         [](const testing::TestParamInfo<Target>& info) {
                           return std::string(info.param.name);
                         });

}  // namespace
}  // namespace hvd::fuzz
