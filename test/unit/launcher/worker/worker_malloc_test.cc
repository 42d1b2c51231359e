#include "launcher/worker/worker_malloc.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

using Env = std::map<std::string, std::string>;

TEST(WorkerMallocTest, TunedSetsBothThresholds) {
  Result<Env> vars = WorkerMallocVars("tuned", "--worker-malloc", {{"PATH", "/usr/bin"}});
  ASSERT_TRUE(vars.ok()) << vars.status().message();
  EXPECT_EQ(*vars, (Env{{"MALLOC_MMAP_THRESHOLD_", "33554432"},
                        {"MALLOC_TRIM_THRESHOLD_", "1073741824"}}));
}

TEST(WorkerMallocTest, SystemSetsNothing) {
  Result<Env> vars = WorkerMallocVars("system", "--worker-malloc", {});
  ASSERT_TRUE(vars.ok());
  EXPECT_TRUE(vars->empty());
}

TEST(WorkerMallocTest, UsersOwnSettingsWin) {
  for (const Env& env : {Env{{"MALLOC_MMAP_THRESHOLD_", "1"}}, Env{{"MALLOC_TRIM_THRESHOLD_", "1"}},
                         Env{{"MALLOC_TOP_PAD_", "1"}}, Env{{"MALLOC_MMAP_MAX_", "0"}},
                         Env{{"GLIBC_TUNABLES", "glibc.rtld.x=1:glibc.malloc.tcache_count=0"}},
                         Env{{"LD_PRELOAD", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"}},
                         Env{{"LD_PRELOAD", "libfoo.so libtcmalloc_minimal.so.4"}},
                         Env{{"LD_PRELOAD", "/opt/mimalloc/lib/libmimalloc.so"}}}) {
    EXPECT_FALSE(UserAllocatorSetting(env).empty()) << env.begin()->first;
    Result<Env> vars = WorkerMallocVars("tuned", "--worker-malloc", env);
    ASSERT_TRUE(vars.ok());
    EXPECT_TRUE(vars->empty()) << env.begin()->first << "=" << env.begin()->second;
  }
  EXPECT_EQ(UserAllocatorSetting({{"MALLOC_TRIM_THRESHOLD_", "1"}}),
            "MALLOC_TRIM_THRESHOLD_ is set");
  EXPECT_EQ(UserAllocatorSetting({{"LD_PRELOAD", "/x/libjemalloc.so.2"}}),
            "LD_PRELOAD loads jemalloc");
}

TEST(WorkerMallocTest, UnrelatedSettingsDoNotCount) {
  for (const Env& env : {Env{{"MALLOC_ARENA_MAX", "2"}}, Env{{"MALLOC_PERTURB_", "7"}},
                         Env{{"GLIBC_TUNABLES", "glibc.rtld.optional_static_tls=1024"}},
                         Env{{"LD_PRELOAD", "/usr/lib/libasan.so.8"}}}) {
    EXPECT_EQ(UserAllocatorSetting(env), "") << env.begin()->first;
    Result<Env> vars = WorkerMallocVars("tuned", "--worker-malloc", env);
    ASSERT_TRUE(vars.ok());
    EXPECT_EQ(vars->size(), 2u) << env.begin()->first;
  }
}

TEST(WorkerMallocTest, AnotherPolicyNamesItsSourceAndValue) {
  Result<Env> vars = WorkerMallocVars("Tuned", "HVD_WORKER_MALLOC", {});
  ASSERT_FALSE(vars.ok());
  EXPECT_EQ(vars.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(vars.status().message(), "HVD_WORKER_MALLOC: expected tuned or system, got 'Tuned'");
}

}  // namespace
}  // namespace hvd::launcher
