#include "autotune/autotune_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace hvd::autotune {
namespace {

class AutotuneCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("hvd_autotune_cache_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Path(const char* name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

ModelSignature ResNetish(int size, int local_size) {
  ModelSignature s(size, local_size);
  s.AddTensor("grad.conv1", "float32", {64, 3, 7, 7});
  s.AddTensor("grad.fc", "float32", {1000, 512});
  return s;
}

TEST_F(AutotuneCacheTest, RoundTripsParamsPerSignature) {
  // Given tuned params for two models stored in one file
  CachedParams tuned;
  tuned.params.fusion_threshold_mb = 23.5;
  tuned.params.cycle_time_ms = 3.25;
  tuned.params.hierarchical_allreduce = true;
  tuned.params.cache_enabled = false;
  tuned.score = 1.5e9;
  CachedParams other;
  other.params.cycle_time_ms = 9;
  const std::string path = Path("cache.json");
  ASSERT_TRUE(StoreCachedParams(path, "aaaa", other).ok());
  ASSERT_TRUE(StoreCachedParams(path, "bbbb", tuned).ok());
  // When loading each
  Result<CachedParams> loaded = LoadCachedParams(path, "bbbb");
  Result<CachedParams> loaded_other = LoadCachedParams(path, "aaaa");
  // Then both come back intact
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->params, tuned.params);
  EXPECT_EQ(loaded->score, tuned.score);
  ASSERT_TRUE(loaded_other.ok());
  EXPECT_EQ(loaded_other->params, other.params);
}

TEST_F(AutotuneCacheTest, ReportsMissingAndMismatchedEntries) {
  struct Case {
    const char* name;
    const char* content;  // nullptr: file absent
    StatusCode code;
  };
  const Case cases[] = {
      {"no file", nullptr, StatusCode::kNotFound},
      {"other signature only",
       R"({"format":"hvd-autotune-cache","version":1,"entries":{"ffff":{}}})",
       StatusCode::kNotFound},
      {"not json", "{oops", StatusCode::kInvalidArgument},
      {"wrong format", R"({"entries":{}})", StatusCode::kInvalidArgument},
      {"malformed entry",
       R"({"format":"hvd-autotune-cache","version":1,"entries":{"abcd":{"cycle_time_ms":"x"}}})",
       StatusCode::kInvalidArgument},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // Given a cache file in some state
    const std::string path = Path("c.json");
    std::filesystem::remove(path);
    if (c.content) std::ofstream(path) << c.content;
    // When loading signature abcd
    Result<CachedParams> r = LoadCachedParams(path, "abcd");
    // Then the error has the expected code and names the file
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), c.code);
    EXPECT_NE(r.status().message().find(path), std::string::npos) << r.status().message();
  }
}

TEST_F(AutotuneCacheTest, StoreRefusesToOverwriteAForeignFile) {
  // Given a file that is not a cache
  const std::string path = Path("precious.json");
  std::ofstream(path) << "[1,2,3]";
  // When storing into it
  Status s = StoreCachedParams(path, "abcd", CachedParams{});
  // Then it fails and the file is untouched
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  std::ifstream in(path);
  std::string content((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(content, "[1,2,3]");
}

TEST(ModelSignatureTest, DigestDependsOnModelAndJobShapeOnly) {
  // Given the same model registered in a different order
  ModelSignature reordered(8, 4);
  reordered.AddTensor("grad.fc", "float32", {1000, 512});
  reordered.AddTensor("grad.conv1", "float32", {64, 3, 7, 7});
  ModelSignature other_dtype(8, 4);
  other_dtype.AddTensor("grad.conv1", "float16", {64, 3, 7, 7});
  other_dtype.AddTensor("grad.fc", "float32", {1000, 512});
  ModelSignature other_shape(8, 4);
  other_shape.AddTensor("grad.conv1", "float32", {64, 3, 7, 7});
  other_shape.AddTensor("grad.fc", "float32", {1000, 51, 2});
  // Then the digest is order independent, 16 hex digits, and changes with anything else
  const std::string base = ResNetish(8, 4).Digest();
  EXPECT_EQ(base.size(), 16u);
  EXPECT_EQ(reordered.Digest(), base);
  EXPECT_EQ(ResNetish(8, 4).Digest(), base);
  EXPECT_NE(ResNetish(16, 4).Digest(), base);
  EXPECT_NE(ResNetish(8, 8).Digest(), base);
  EXPECT_NE(other_dtype.Digest(), base);
  EXPECT_NE(other_shape.Digest(), base);
}

}  // namespace
}  // namespace hvd::autotune
