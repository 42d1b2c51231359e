#include "autotune/autotune_cache.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
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

// Two jobs storing into one cache at once keep every entry and a valid file (until 2026-12-01
// they wrote one temporary file: a broken cache, and lost entries).
TEST_F(AutotuneCacheTest, ConcurrentStoresKeepEveryEntry) {
  const std::string path = Path("cache.json");
  constexpr int kPerProcess = 60;
  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    children[c] = ::fork();
    ASSERT_GE(children[c], 0);
    if (children[c] == 0) {
      for (int i = 0; i < kPerProcess; ++i) {
        CachedParams entry;
        entry.params.cycle_time_ms = i;
        if (!StoreCachedParams(path, "p" + std::to_string(c) + "-" + std::to_string(i), entry)
                 .ok()) {
          ::_exit(1);
        }
      }
      ::_exit(0);
    }
  }
  for (pid_t child : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  }
  for (int c = 0; c < 2; ++c) {
    for (int i = 0; i < kPerProcess; ++i) {
      Result<CachedParams> r =
          LoadCachedParams(path, "p" + std::to_string(c) + "-" + std::to_string(i));
      ASSERT_TRUE(r.ok()) << r.status().ToString();
      EXPECT_EQ(r->params.cycle_time_ms, i);
    }
  }
  for (const auto& f : std::filesystem::directory_iterator(dir_)) {
    EXPECT_EQ(f.path().filename().string().find(".tmp"), std::string::npos) << f.path();
  }
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

constexpr const char* kEntryFields =
    R"("hierarchical_allreduce":false,"hierarchical_allgather":false,"torus_allreduce":false,)"
    R"("cache_enabled":true,)";

std::string CacheWithEntry(const std::string& entry) {
  return R"({"format":"hvd-autotune-cache","version":1,"entries":{"abcd":)" + entry + "}}";
}

TEST(AutotuneCacheParseTest, RefusesEntriesOfTheWrongTypeOrOutOfRangeNamingTheField) {
  struct Case {
    std::string entry;
    const char* names;  // what the error must name
  };
  const std::string fields = kEntryFields;
  const Case cases[] = {
      {"5", "not an object"},
      {"{}", "'hierarchical_allreduce' is missing"},
      {R"({"hierarchical_allreduce":1})", "'hierarchical_allreduce' is 1, not true or false"},
      {"{" + fields + R"("cycle_time_ms":-1,"tensor_fusion_threshold_mb":8,"score":1})",
       "'cycle_time_ms' is -1"},
      {"{" + fields + R"("cycle_time_ms":"5","tensor_fusion_threshold_mb":8,"score":1})",
       "'cycle_time_ms' is \"5\""},
      {"{" + fields + R"("cycle_time_ms":1e300,"tensor_fusion_threshold_mb":8,"score":1})",
       "'cycle_time_ms' is 1e+300, not a number in [0, 60000]"},
      {"{" + fields + R"("cycle_time_ms":5,"tensor_fusion_threshold_mb":1e300,"score":1})",
       "'tensor_fusion_threshold_mb' is 1e+300"},
      {"{" + fields + R"("cycle_time_ms":5,"tensor_fusion_threshold_mb":-0.5,"score":1})",
       "'tensor_fusion_threshold_mb' is -0.5"},
      {"{" + fields + R"("cycle_time_ms":5,"tensor_fusion_threshold_mb":8,"score":-2})",
       "'score' is -2"},
      {"{" + fields + R"("cycle_time_ms":5,"tensor_fusion_threshold_mb":8})", "'score' is missing"},
      {"{" + fields + R"("cycle_time_ms":5,"tensor_fusion_threshold_mb":8,"score":1,"tuned":3})",
       "'tuned' is 3, not a list of knob names"},
      {"{" + fields +
           R"("cycle_time_ms":5,"tensor_fusion_threshold_mb":8,"score":1,"tuned":["speed"]})",
       "'tuned' holds \"speed\", not a knob name"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.entry);
    // Given a cache whose entry for abcd is malformed
    // When it is read
    Result<CachedParams> r = ParseCachedParams(CacheWithEntry(c.entry), "c.json", "abcd");
    // Then the error names the file, the entry and the field
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find("autotune cache 'c.json': entry abcd is malformed"),
              std::string::npos)
        << r.status().message();
    EXPECT_NE(r.status().message().find(c.names), std::string::npos) << r.status().message();
  }
  // and the edges of the ranges are values
  Result<CachedParams> edge = ParseCachedParams(
      CacheWithEntry("{" + fields +
                     R"("cycle_time_ms":60000,"tensor_fusion_threshold_mb":1048576,"score":0})"),
      "c.json", "abcd");
  ASSERT_TRUE(edge.ok()) << edge.status().ToString();
  EXPECT_EQ(edge->params.cycle_time_ms, 60000);
  EXPECT_EQ(edge->params.fusion_threshold_mb, 1048576);
}

TEST(AutotuneCacheParseTest, RefusesFilesThatAreNoCacheWithoutThrowing) {
  const std::string deep = std::string(9, '[') + std::string(9, ']');
  const std::string cases[] = {
      R"({"format":5,"version":1,"entries":{}})",                       // format not a string
      R"({"format":"hvd-autotune-cache","version":"1","entries":{}})",  // version a string
      R"({"format":"hvd-autotune-cache","version":1.5,"entries":{}})",
      R"({"format":"hvd-autotune-cache","version":1,"entries":[]})",
      R"({"format":"hvd-autotune-cache","version":1,"entries":{"x":)" + deep + "}}",
      std::string("{\"format\"\0:1}", 14),
      "[1,2,3]",
  };
  for (const std::string& text : cases) {
    SCOPED_TRACE(text);
    // When a file that is not a cache is read, or stored into
    Result<CachedParams> loaded = ParseCachedParams(text, "c.json", "abcd");
    Result<std::string> merged = MergeCachedParams(text, "c.json", "abcd", CachedParams{});
    // Then both are errors naming the file, nothing thrown
    ASSERT_FALSE(loaded.ok());
    EXPECT_EQ(loaded.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(loaded.status().message().find("c.json"), std::string::npos);
    ASSERT_FALSE(merged.ok());
    EXPECT_NE(merged.status().message().find("c.json"), std::string::npos);
  }
}

TEST(AutotuneCacheParseTest, MergeKeepsTheOtherEntriesAsTheyWere) {
  // Given a cache holding a good entry and one this build cannot read
  const std::string text = R"({"format":"hvd-autotune-cache","version":1,"entries":{)"
                           R"("odd":{"from":"a later build"},"good":{)" +
                           std::string(kEntryFields) +
                           R"("cycle_time_ms":3,"tensor_fusion_threshold_mb":16,"score":9}}})";
  CachedParams mine;
  mine.params.cycle_time_ms = 2.5;
  mine.score = 4;
  // When a new entry is stored
  Result<std::string> merged = MergeCachedParams(text, "c.json", "mine", mine);
  ASSERT_TRUE(merged.ok()) << merged.status().ToString();
  // Then the new and the good entry read back, and the other is still there as it was
  Result<CachedParams> back = ParseCachedParams(*merged, "c.json", "mine");
  ASSERT_TRUE(back.ok()) << back.status().ToString();
  EXPECT_EQ(back->params, mine.params);
  Result<CachedParams> good = ParseCachedParams(*merged, "c.json", "good");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(good->params.fusion_threshold_mb, 16);
  EXPECT_NE(merged->find(R"("from": "a later build")"), std::string::npos) << *merged;
}

TEST_F(AutotuneCacheTest, AnEmptyFileIsACacheWithNoEntries) {
  // Given an empty file (made with touch, say)
  const std::string path = Path("empty.json");
  std::ofstream(path).flush();
  // When loading from it, then storing into it
  Result<CachedParams> before = LoadCachedParams(path, "abcd");
  CachedParams tuned;
  tuned.params.cycle_time_ms = 4;
  Status stored = StoreCachedParams(path, "abcd", tuned);
  // Then it has no entry (not an error to warn about), and takes the stored one
  EXPECT_EQ(before.status().code(), StatusCode::kNotFound) << before.status().ToString();
  ASSERT_TRUE(stored.ok()) << stored.ToString();
  Result<CachedParams> after = LoadCachedParams(path, "abcd");
  ASSERT_TRUE(after.ok()) << after.status().ToString();
  EXPECT_EQ(after->params, tuned.params);
}

TEST_F(AutotuneCacheTest, RefusesAFileLargerThanAnyCache) {
  // Given a file past the size limit (a device, a log file given by mistake)
  const std::string path = Path("huge.json");
  std::ofstream(path) << std::string(kMaxCacheBytes + 1, ' ');
  // When loading and storing
  Result<CachedParams> r = LoadCachedParams(path, "abcd");
  Status s = StoreCachedParams(path, "abcd", CachedParams{});
  // Then both refuse it, naming it, and the file is left alone
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(r.status().message().find("larger than 16 MiB"), std::string::npos)
      << r.status().message();
  EXPECT_NE(r.status().message().find(path), std::string::npos);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(std::filesystem::file_size(path), kMaxCacheBytes + 1);
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

// The knobs the storing job tuned travel with the entry; an entry without the list (written
// before 2026-12-01) counts every knob as tuned.
TEST_F(AutotuneCacheTest, TheTunedKnobsRoundTripAndDefaultToAll) {
  CachedParams entry;
  entry.tuned = MakeKnobSet({Knob::kFusionThreshold, Knob::kCycleTime});
  const std::string path = Path("cache.json");
  ASSERT_TRUE(StoreCachedParams(path, "abcd", entry).ok());
  Result<CachedParams> loaded = LoadCachedParams(path, "abcd");
  ASSERT_TRUE(loaded.ok()) << loaded.status().ToString();
  EXPECT_EQ(loaded->tuned, entry.tuned);
  Result<CachedParams> old = ParseCachedParams(
      CacheWithEntry("{" + std::string(kEntryFields) +
                     R"("cycle_time_ms":5,"tensor_fusion_threshold_mb":8,"score":1})"),
      "c.json", "abcd");
  ASSERT_TRUE(old.ok()) << old.status().ToString();
  EXPECT_TRUE(old->tuned.all());
}

}  // namespace
}  // namespace hvd::autotune
