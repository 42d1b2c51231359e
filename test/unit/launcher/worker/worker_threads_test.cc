#include "launcher/worker/worker_threads.h"

#include <gtest/gtest.h>

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

TEST(WorkerThreadsTest, ThePolicyIsShareOrSystem) {
  EXPECT_TRUE(CheckWorkerThreadsPolicy("share", "--worker-threads").ok());
  EXPECT_TRUE(CheckWorkerThreadsPolicy("system", "--worker-threads").ok());
  Status bad = CheckWorkerThreadsPolicy("Share", "HVD_WORKER_THREADS");
  EXPECT_EQ(bad.message(), "HVD_WORKER_THREADS: expected share or system, got 'Share'");
}

}  // namespace
}  // namespace hvd::launcher
