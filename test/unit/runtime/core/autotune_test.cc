// Autotune in the runtime (HVD_AUTOTUNE=1) with 2 thread-ranks and a tiny schedule: every rank
// ends on the same knobs, the CSV log has Horovod's header, the search leaves a bad start,
// fixed knobs stay put, and a cached result skips tuning.
#include <gtest/gtest.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "autotune/params.h"
#include "test/unit/runtime/core/rank_harness.h"
#include "test/unit/timeline/test_files.h"

namespace hvd::testing {
namespace {

using runtime::DataType;
using runtime::TunedKnobs;
using AutotuneDirTest = hvd::timeline::testing::TempDirTest;

constexpr int kSteps = 120;

// Bad start: no fusion and a 100 ms cycle; 1 warm-up sample, 1 step per sample, 2 Bayesian
// observations (then the cache switch is tried both ways).
void TinySchedule(runtime::RuntimeConfig* c, const std::string& log, const std::string& cache) {
  c->fusion_threshold_bytes = 0;
  c->cycle_time = std::chrono::milliseconds(100);
  c->autotune.enabled = true;
  c->autotune.warmup_samples = 1;
  c->autotune.steps_per_sample = 1;
  c->autotune.bayes_opt_max_samples = 2;
  c->autotune.log_path = log;
  c->autotune.cache_path = cache;
}

// Runs kSteps training-like steps (3 allreduces each) on 2 ranks; returns each rank's knobs
// after shutdown and whether rank 0 was still tuning at the end.
// `prefix` names the layers (another prefix: another model); with `prologue` one allreduce
// runs alone before the first step (a broadcast of the resume epoch, say).
std::array<TunedKnobs, 2> Train(const ConfigTweak& tweak, bool* still_tuning,
                                const std::string& prefix = "layer", bool prologue = false) {
  std::array<TunedKnobs, 2> knobs;
  std::array<bool, 2> tuning{};
  RunRanks(
      2,
      [&](int rank, runtime::Runtime& rt) {
        std::vector<float> a(64, 1.0f), b(32, 1.0f), c(16, 1.0f);
        if (prologue) {
          runtime::OpOptions o;
          o.name = "prologue";
          auto spec = Spec(c.data(), DataType::kFloat32, {static_cast<int64_t>(c.size())});
          auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
          ASSERT_TRUE(h.ok());
          ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
        }
        for (int step = 0; step < kSteps; ++step) {
          std::vector<int64_t> handles;
          int i = 0;
          for (auto* v : {&a, &b, &c}) {
            runtime::OpOptions o;
            o.name = prefix + std::to_string(i++);
            auto spec = Spec(v->data(), DataType::kFloat32, {static_cast<int64_t>(v->size())});
            auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
            ASSERT_TRUE(h.ok());
            handles.push_back(*h);
          }
          for (int64_t h : handles) ASSERT_TRUE(WaitAndRelease(rt, h).ok());
        }
        tuning[rank] = rt.autotuning();
        ASSERT_TRUE(rt.Shutdown().ok());
        knobs[rank] = rt.tuned_knobs();
      },
      tweak);
  *still_tuning = tuning[0];
  return knobs;
}

std::vector<std::string> Lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty()) lines.push_back(line);
  }
  return lines;
}

TEST_F(AutotuneDirTest, RanksAgreeLogParsesAndTheBadStartIsLeft) {
  // Given autotune from a bad start with a CSV log and a cache file
  const std::string log = Path("autotune.csv"), cache = Path("cache.json");
  bool still_tuning = true;
  // When 2 ranks train until tuning ends
  auto knobs =
      Train([&](runtime::RuntimeConfig* c) { TinySchedule(c, log, cache); }, &still_tuning);
  // Then tuning finished and every rank runs the same knobs
  EXPECT_FALSE(still_tuning);
  EXPECT_EQ(knobs[0], knobs[1]);
  // and they are better than the start (the search never proposes fusion 0 / 100 ms)
  EXPECT_GT(knobs[0].fusion_threshold_bytes, 0);
  EXPECT_LT(knobs[0].cycle_time, std::chrono::milliseconds(100));
  // and the log is Horovod's CSV: header, one row per observation, a final best row
  std::vector<std::string> lines = Lines(log);
  ASSERT_GE(lines.size(), 3u);
  EXPECT_EQ(lines[0], autotune::CsvHeader());
  for (size_t i = 1; i < lines.size(); ++i) {
    std::stringstream row(lines[i]);
    std::vector<std::string> cols;
    for (std::string col; std::getline(row, col, ',');) cols.push_back(col);
    ASSERT_EQ(cols.size(), 7u) << lines[i];
    EXPECT_GT(std::stod(cols[6]), 0.0) << lines[i];  // score, bytes/s
  }
  // and the best params were stored for this model
  EXPECT_TRUE(std::filesystem::exists(cache));
}

TEST_F(AutotuneDirTest, FixedKnobStaysAndCachedResultSkipsTuning) {
  const std::string cache = Path("cache.json");
  bool still_tuning = true;
  // Given a first job that tunes with the fusion threshold fixed by the user
  auto first = Train(
      [&](runtime::RuntimeConfig* c) {
        TinySchedule(c, "", cache);
        c->fusion_threshold_bytes = 12345;
        c->autotune.fusion_threshold_fixed = true;
      },
      &still_tuning);
  // Then the fixed knob never moved
  EXPECT_FALSE(still_tuning);
  EXPECT_EQ(first[0].fusion_threshold_bytes, 12345);
  EXPECT_EQ(first[0], first[1]);
  // When the same model runs again with the cache
  const std::string log = Path("second.csv");
  auto second = Train(
      [&](runtime::RuntimeConfig* c) {
        TinySchedule(c, log, cache);
        c->fusion_threshold_bytes = 12345;
        c->autotune.fusion_threshold_fixed = true;
      },
      &still_tuning);
  // Then it ends on the cached knobs without a search (no observation rows in its log)
  EXPECT_FALSE(still_tuning);
  EXPECT_EQ(second[0], first[0]);
  EXPECT_EQ(second[0], second[1]);
  EXPECT_LE(Lines(log).size(), 1u);
}

TEST_F(AutotuneDirTest, CachedResultLeavesTheKnobsThisJobSets) {
  const std::string cache = Path("cache.json");
  bool still_tuning = true;
  // Given a cache written by a job that tuned every knob
  auto first = Train([&](runtime::RuntimeConfig* c) { TinySchedule(c, "", cache); }, &still_tuning);
  ASSERT_FALSE(still_tuning);
  ASSERT_NE(first[0].cycle_time, std::chrono::milliseconds(7));
  // When the same model runs again with the cycle time set by the user and no response cache
  auto second = Train(
      [&](runtime::RuntimeConfig* c) {
        TinySchedule(c, "", cache);
        c->cycle_time = std::chrono::milliseconds(7);
        c->autotune.cycle_time_fixed = true;
        c->cache_capacity = 0;
      },
      &still_tuning);
  // Then it takes the cached fusion threshold without a search, and keeps its own cycle time
  // and its response cache off
  EXPECT_FALSE(still_tuning);
  EXPECT_EQ(second[0].fusion_threshold_bytes, first[0].fusion_threshold_bytes);
  EXPECT_EQ(second[0].cycle_time, std::chrono::milliseconds(7));
  EXPECT_FALSE(second[0].cache_enabled);
  EXPECT_EQ(second[0], second[1]);
}

// Without warm-up (--autotune-warmup-samples 0) the model's signature still holds a whole
// sample's tensors: two models that start with the same lone op are two models. Until
// 2026-12-01 it held the first cycle's tensors only, and the second model took the first's
// cached knobs without a search.
TEST_F(AutotuneDirTest, WithoutWarmUpTheSignatureStillCoversTheModel) {
  const std::string cache = Path("cache.json");
  bool still_tuning = true;
  const auto no_warmup = [&](const std::string& log) {
    return [&, log](runtime::RuntimeConfig* c) {
      TinySchedule(c, log, cache);
      c->autotune.warmup_samples = 0;
    };
  };
  Train(no_warmup(""), &still_tuning, "layer", /*prologue=*/true);
  ASSERT_FALSE(still_tuning);
  ASSERT_TRUE(std::filesystem::exists(cache));
  const std::string log = Path("other.csv");
  Train(no_warmup(log), &still_tuning, "other", /*prologue=*/true);
  EXPECT_FALSE(still_tuning);
  EXPECT_GT(Lines(log).size(), 2u) << "the other model was not tuned: it took the first's entry";
}

}  // namespace
}  // namespace hvd::testing
