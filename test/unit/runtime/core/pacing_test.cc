// The background loop's pacing: an idle runtime must not spin (2-core CI machines), and a
// small allreduce must not wait out a cycle. Latencies are printed for the record; the
// assertions are loose so a loaded machine does not make them flaky.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <thread>

#include "test/unit/runtime/core/rank_harness.h"

namespace hvd::testing {
namespace {

using Clock = std::chrono::steady_clock;

double ProcessCpuSeconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

TEST(PacingTest, IdleRanksDoNotSpin) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // settle into idle backoff
    const double cpu0 = ProcessCpuSeconds();
    const auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    const double cpu = ProcessCpuSeconds() - cpu0;
    const double wall = std::chrono::duration<double>(Clock::now() - t0).count();
    if (rank == 0) std::printf("idle: %.1f%% of one core for 2 ranks\n", 100 * cpu / wall);
    EXPECT_LT(cpu / wall, 0.25) << "the idle loop is spinning";
  });
}

TEST(PacingTest, SmallAllreduceLatency) {
  constexpr int kIters = 2000;
  std::vector<double> medians(2);
  RunRanks(2, [&](int rank, runtime::Runtime& rt) {
    std::vector<float> buf(1024, 1.0f);  // 4 KiB
    auto spec = Spec(buf.data(), runtime::DataType::kFloat32, {1024});
    runtime::OpOptions o;
    o.name = "latency";
    std::vector<double> us;
    for (int i = 0; i < kIters; ++i) {
      const auto t0 = Clock::now();
      auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
      ASSERT_TRUE(h.ok());
      ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
      us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    }
    std::sort(us.begin(), us.end());
    medians[rank] = us[us.size() / 2];
    if (rank == 0) {
      std::printf(
          "4 KiB allreduce, 2 thread-ranks, in-process transport: p50 %.1f us, p90 %.1f us\n",
          us[us.size() / 2], us[us.size() * 9 / 10]);
    }
  });
  // Far below the idle backoff (ms): an enqueue wakes the loop instead of waiting a cycle.
  EXPECT_LT(medians[0], 2000.0);
}

}  // namespace
}  // namespace hvd::testing
