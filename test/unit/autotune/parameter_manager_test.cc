#include "autotune/parameter_manager.h"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

namespace hvd::autotune {
namespace {

using Clock = ParameterManager::Clock;
using Stage = ParameterManager::Stage;

// A synthetic job: every step reduces tensors "a" and "b" (1 MB in all) and takes longer
// the further the knobs are from (20 MiB, 10 ms); the cache and hierarchical allreduce help.
double StepSeconds(const Params& p) {
  double t = 0.01 + 0.002 * std::pow((p.fusion_threshold_mb - 20.0) / 64.0, 2) +
             0.002 * std::pow((p.cycle_time_ms - 10.0) / 99.0, 2);
  if (!p.cache_enabled) t += 0.001;
  if (p.hierarchical_allreduce) t -= 0.001;
  return t;
}

struct Driver {
  explicit Driver(ParameterManager::Options options) : manager(std::move(options)) {}

  // Runs steps until tuning ends (or `max_steps`); records stages and changes.
  void Run(int max_steps = 100000) {
    for (int i = 0; i < max_steps && manager.tuning(); ++i) {
      now += std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(StepSeconds(manager.current())));
      Stage before = manager.stage();
      if (manager.Update({"a", "b"}, 1 << 20, now)) ++changes;
      if (stages.empty() || stages.back() != manager.stage()) {
        if (stages.empty()) stages.push_back(before);
        if (stages.back() != manager.stage()) stages.push_back(manager.stage());
      }
    }
  }

  ParameterManager manager;
  Clock::time_point now{};
  int changes = 0;
  std::vector<Stage> stages;
};

ParameterManager::Options SmallOptions() {
  ParameterManager::Options o;
  o.warmup_samples = 2;
  o.steps_per_sample = 3;
  o.bayes_opt_max_samples = 6;
  o.seed = 1;
  return o;
}

TEST(ParameterManagerTest, WalksWarmupBayesianCategoricalDone) {
  // Given hierarchical allreduce and the cache available and nothing fixed
  ParameterManager::Options o = SmallOptions();
  o.available = MakeKnobSet({Knob::kHierarchicalAllreduce, Knob::kCacheEnabled});
  Driver d(o);
  // When the job runs until tuning ends
  d.Run();
  // Then the stages come in order and every observation is one of: 6 Bayesian + 2 + 2
  EXPECT_EQ(d.stages, (std::vector<Stage>{Stage::kWarmup, Stage::kBayesian, Stage::kCategorical,
                                          Stage::kDone}));
  const auto& obs = d.manager.observations();
  ASSERT_EQ(obs.size(), 10u);
  // The first Bayesian observations are Horovod's seed points (MiB, ms)
  const double seeds[][2] = {{4, 5}, {32, 50}, {16, 25}, {8, 10}};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(obs[i].params.fusion_threshold_mb, seeds[i][0]) << i;
    EXPECT_EQ(obs[i].params.cycle_time_ms, seeds[i][1]) << i;
  }
  // The categorical stage tries both values of each knob in turn
  EXPECT_NE(obs[6].params.hierarchical_allreduce, obs[7].params.hierarchical_allreduce);
  EXPECT_NE(obs[8].params.cache_enabled, obs[9].params.cache_enabled);
  // At the end the best observation is kept and the helpful knobs are on
  EXPECT_FALSE(d.manager.tuning());
  EXPECT_EQ(d.manager.current(), d.manager.best());
  EXPECT_TRUE(d.manager.best().hierarchical_allreduce);
  EXPECT_TRUE(d.manager.best().cache_enabled);
  for (const auto& ob : obs) EXPECT_LE(ob.score, d.manager.best_score());
  EXPECT_GT(d.changes, 0);
  // And nothing changes afterwards
  EXPECT_FALSE(d.manager.Update({"a"}, 1, d.now + std::chrono::hours(1)));
}

TEST(ParameterManagerTest, HonoursFixedKnobs) {
  struct Case {
    const char* name;
    KnobSet fixed;
    size_t expected_observations;
  };
  const Case cases[] = {
      {"cycle time fixed", MakeKnobSet({Knob::kCycleTime}), 6 + 2},
      {"fusion and cycle fixed", MakeKnobSet({Knob::kFusionThreshold, Knob::kCycleTime}), 2},
      {"cache fixed", MakeKnobSet({Knob::kCacheEnabled}), 6},
      {"everything fixed",
       MakeKnobSet({Knob::kFusionThreshold, Knob::kCycleTime, Knob::kCacheEnabled}), 0},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    // Given a user who set some knobs explicitly
    ParameterManager::Options o = SmallOptions();
    o.initial.cycle_time_ms = 7.0;
    o.initial.fusion_threshold_mb = 33.0;
    o.initial.cache_enabled = false;
    o.fixed = c.fixed;
    Driver d(o);
    EXPECT_EQ(d.manager.tuning(), c.expected_observations > 0);
    // When tuning runs to the end
    d.Run();
    // Then fixed knobs never move and only the free ones were searched
    EXPECT_EQ(d.manager.observations().size(), c.expected_observations);
    for (const auto& ob : d.manager.observations()) {
      if (Contains(c.fixed, Knob::kCycleTime)) {
        EXPECT_EQ(ob.params.cycle_time_ms, 7.0);
      }
      if (Contains(c.fixed, Knob::kFusionThreshold)) {
        EXPECT_EQ(ob.params.fusion_threshold_mb, 33.0);
      }
      if (Contains(c.fixed, Knob::kCacheEnabled)) {
        EXPECT_FALSE(ob.params.cache_enabled);
      }
    }
    if (c.expected_observations == 0) {
      EXPECT_EQ(d.manager.current(), o.initial);
    }
  }
}

TEST(ParameterManagerTest, ScoreIsBytesPerSecondOfTheWindowAndMedianOfFive) {
  // Given no warm-up, a sample of 2 steps, and the cache as the only knob
  ParameterManager::Options o;
  o.warmup_samples = 0;
  o.steps_per_sample = 2;
  o.fixed = MakeKnobSet({Knob::kFusionThreshold, Knob::kCycleTime});
  ParameterManager m(o);
  Clock::time_point t{};
  // When the first update only starts the clock and then 5 samples of 2 steps arrive,
  // each step reporting 1000 bytes after k seconds (k = 1..5 per sample)
  EXPECT_FALSE(m.Update({"x"}, 999999, t));
  bool changed = false;
  for (int k : {5, 1, 4, 2, 3}) {
    for (int step = 0; step < 2; ++step) {
      t += std::chrono::seconds(k);
      changed = m.Update({"x"}, 1000, t);
    }
  }
  // Then one observation exists with the median score 2000 B / 6 s
  ASSERT_EQ(m.observations().size(), 1u);
  EXPECT_NEAR(m.observations()[0].score, 2000.0 / 6.0, 1e-9);
  // And the next value of the cache knob is now being tried
  EXPECT_TRUE(changed);
  EXPECT_FALSE(m.current().cache_enabled);
}

TEST(ParameterManagerTest, WritesHorovodCsvLogWithBestRowLast) {
  // Given a log sink
  std::vector<std::string> lines;
  ParameterManager::Options o = SmallOptions();
  o.log_sink = [&](const std::string& line) { lines.push_back(line); };
  Driver d(o);
  // When tuning runs to the end
  d.Run();
  // Then the header is Horovod's, one row per observation follows, and the last is the best
  ASSERT_EQ(lines.size(), 1 + d.manager.observations().size() + 1);
  EXPECT_EQ(lines.front(),
            "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
            "cycle_time_ms,tensor_fusion_threshold,score");
  EXPECT_EQ(lines[1].rfind("0,0,0,1,5,4,", 0), 0u) << lines[1];
  EXPECT_EQ(lines.back(), CsvRow(d.manager.best(), d.manager.best_score()));
  for (size_t i = 1; i < lines.size(); ++i) {
    EXPECT_EQ(std::count(lines[i].begin(), lines[i].end(), ','), 6) << lines[i];
    EXPECT_EQ(lines[i].find(", "), std::string::npos) << "no Horovod stray ', ': " << lines[i];
  }
  std::string joined;
  for (const auto& l : lines) joined += l + "\n";
  EXPECT_EQ(d.manager.CsvLog(), joined);
}

TEST(ParameterManagerTest, SameSeedSameSchedule) {
  // Given two managers with the same options
  Driver a(SmallOptions());
  Driver b(SmallOptions());
  // When both run the same job
  a.Run();
  b.Run();
  // Then they observe exactly the same params
  ASSERT_EQ(a.manager.observations().size(), b.manager.observations().size());
  for (size_t i = 0; i < a.manager.observations().size(); ++i) {
    EXPECT_EQ(a.manager.observations()[i].params, b.manager.observations()[i].params) << i;
  }
}

}  // namespace
}  // namespace hvd::autotune
