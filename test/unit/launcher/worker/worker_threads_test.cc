#include "launcher/worker/worker_threads.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace hvd::launcher {
namespace {

using Env = std::map<std::string, std::string>;

TEST(WorkerThreadsTest, ShareDividesTheHostsCpusAmongItsRanks) {
  Env env = {{"HVD_WORKER_THREADS", "share"}};
  ShareWorkerThreads(env, 16, 8);
  EXPECT_EQ(env["OMP_NUM_THREADS"], "2");
  Env uneven = {{"HVD_WORKER_THREADS", "share"}};
  ShareWorkerThreads(uneven, 16, 6);  // 2.67: the spare CPUs stay free
  EXPECT_EQ(uneven["OMP_NUM_THREADS"], "2");
  Env crowded = {{"HVD_WORKER_THREADS", "share"}};
  ShareWorkerThreads(crowded, 2, 16);  // more ranks than CPUs: at least 1
  EXPECT_EQ(crowded["OMP_NUM_THREADS"], "1");
}

TEST(WorkerThreadsTest, TheUsersValueSystemOrNothingKnownAddsNothing) {
  Env own = {{"HVD_WORKER_THREADS", "share"}, {"OMP_NUM_THREADS", "7"}};
  ShareWorkerThreads(own, 16, 8);
  EXPECT_EQ(own["OMP_NUM_THREADS"], "7");
  for (Env env : {Env{{"HVD_WORKER_THREADS", "system"}}, Env{}}) {
    ShareWorkerThreads(env, 16, 8);
    EXPECT_EQ(env.count("OMP_NUM_THREADS"), 0u);
  }
  Env unknown = {{"HVD_WORKER_THREADS", "share"}};
  ShareWorkerThreads(unknown, 0, 8);  // another host's CPUs: its agent counts them
  ShareWorkerThreads(unknown, 16, 0);
  EXPECT_EQ(unknown.count("OMP_NUM_THREADS"), 0u);
}

TEST(WorkerThreadsTest, PhysicalCoresCountCoresNotHardwareThreads) {
  // Given a topology of 2 packages x 2 cores x 2 threads (CPUs 0-7), CPU 8 without topology
  namespace fs = std::filesystem;
  const fs::path root = fs::temp_directory_path() / ("hvd_cores_test_" + std::to_string(getpid()));
  for (int cpu = 0; cpu < 8; ++cpu) {
    const fs::path topology = root / ("cpu" + std::to_string(cpu)) / "topology";
    fs::create_directories(topology);
    std::ofstream(topology / "physical_package_id") << cpu / 4 << "\n";
    std::ofstream(topology / "core_id") << (cpu % 4) / 2 << "\n";
  }
  // Then hardware threads of one core count once, the unknown CPU as a core of its own
  EXPECT_EQ(PhysicalCores({0, 1, 2, 3, 4, 5, 6, 7}, root.string()), 4);
  EXPECT_EQ(PhysicalCores({0, 1}, root.string()), 1);
  EXPECT_EQ(PhysicalCores({0, 2, 4}, root.string()), 3);
  EXPECT_EQ(PhysicalCores({0, 8}, root.string()), 2);
  EXPECT_EQ(PhysicalCores({}, root.string()), 0);
  fs::remove_all(root);
  // And this machine has at least one core among its CPUs, and no more cores than CPUs
  EXPECT_GE(PhysicalCores({0}), 1);
}

TEST(WorkerThreadsTest, ThePolicyIsShareOrSystem) {
  EXPECT_TRUE(CheckWorkerThreadsPolicy("share", "--worker-threads").ok());
  EXPECT_TRUE(CheckWorkerThreadsPolicy("system", "--worker-threads").ok());
  Status bad = CheckWorkerThreadsPolicy("Share", "HVD_WORKER_THREADS");
  EXPECT_EQ(bad.message(), "HVD_WORKER_THREADS: expected share or system, got 'Share'");
}

}  // namespace
}  // namespace hvd::launcher
