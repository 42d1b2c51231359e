#include "runtime/runtime_config.h"

#include <gtest/gtest.h>

#include <limits>
#include <tuple>

namespace hvd::runtime {
namespace {

Result<RuntimeConfig> Load(std::map<std::string, std::string> vars) {
  return LoadRuntimeConfig(env::Environment::FromMap(std::move(vars)));
}

TEST(RuntimeConfigTest, DefaultsAreASingleRank) {
  auto c = Load({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->size, 1);
  EXPECT_EQ(c->rank, 0);
  EXPECT_EQ(c->fusion_threshold_bytes, 128 * 1024 * 1024);
  EXPECT_EQ(c->cycle_time, std::chrono::microseconds(1000));
  EXPECT_EQ(c->cache_capacity, 1024);
  EXPECT_EQ(c->stall_check_time, std::chrono::seconds(60));
  EXPECT_EQ(c->stall_shutdown_time, std::chrono::seconds(600));
  EXPECT_TRUE(c->rendezvous_addr.empty());
  EXPECT_EQ(c->heartbeat_timeout, std::chrono::milliseconds(5000));
  EXPECT_EQ(c->shm_single_copy_bytes, int64_t{2} << 20);
  EXPECT_EQ(c->shm_single_copy, "auto");
  EXPECT_EQ(c->output_cache_bytes, int64_t{128} << 20);
  auto none = Load({{"HVD_OUTPUT_CACHE_BYTES", "0"}});
  ASSERT_TRUE(none.ok()) << none.status().ToString();
  EXPECT_EQ(none->output_cache_bytes, 0);
  auto always = Load({{"HVD_SHM_SINGLE_COPY", "Always"}});
  ASSERT_TRUE(always.ok()) << always.status().ToString();
  EXPECT_EQ(always->shm_single_copy, "always");
  EXPECT_EQ(always->shm_single_copy_bytes, int64_t{2} << 20);
  auto never = Load({{"HVD_SHM_SINGLE_COPY", "never"}, {"HVD_SHM_SINGLE_COPY_BYTES", "1"}});
  ASSERT_TRUE(never.ok()) << never.status().ToString();
  EXPECT_EQ(never->shm_single_copy_bytes, 0);
  EXPECT_EQ(c->tcp_congestion, "auto");
  for (const char* name : {"system", "cubic", "bbr", "reno", "auto"}) {
    auto cc = Load({{"HVD_TCP_CONGESTION", name}});
    ASSERT_TRUE(cc.ok()) << cc.status().ToString();
    EXPECT_EQ(cc->tcp_congestion, name);
  }
  EXPECT_EQ(c->tcp_halving_bytes, -1);  // auto: measured per group
  for (auto [value, expected] :
       {std::pair{"auto", int64_t{-1}}, std::pair{"off", std::numeric_limits<int64_t>::max()},
        std::pair{"0", int64_t{0}}, std::pair{"65536", int64_t{65536}}}) {
    auto h = Load({{"HVD_TCP_HALVING_BYTES", value}});
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    EXPECT_EQ(h->tcp_halving_bytes, expected) << value;
  }
  EXPECT_EQ(c->shm_direct_bytes, -1);  // auto: by the group's size
  for (auto [value, expected] : {std::pair{"auto", int64_t{-1}}, std::pair{"0", int64_t{0}},
                                 std::pair{"65536", int64_t{65536}}}) {
    auto d = Load({{"HVD_SHM_DIRECT_BYTES", value}});
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    EXPECT_EQ(d->shm_direct_bytes, expected) << value;
  }
  auto fast = Load({{"HVD_HEARTBEAT_TIMEOUT_SECONDS", "2.5"}});
  ASSERT_TRUE(fast.ok()) << fast.status().ToString();
  EXPECT_EQ(fast->heartbeat_timeout, std::chrono::milliseconds(2500));
}

TEST(RuntimeConfigTest, GpuOperationsTakeHorovodsNamesAndRejectOthers) {
  auto unset = Load({});
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_EQ(unset->gpu_operations, "auto");
  for (auto [var, value, expected] : {std::tuple{"HVD_GPU_OPERATIONS", "NCCL", "nccl"},
                                      std::tuple{"HOROVOD_GPU_OPERATIONS", "MPI", "cpu"},
                                      std::tuple{"HOROVOD_GPU_ALLREDUCE", "GLOO", "cpu"},
                                      std::tuple{"HOROVOD_GPU_ALLREDUCE", "nccl", "nccl"},
                                      std::tuple{"HVD_GPU_OPERATIONS", "cpu", "cpu"}}) {
    auto c = Load({{var, value}});
    ASSERT_TRUE(c.ok()) << var << "=" << value << ": " << c.status().ToString();
    EXPECT_EQ(c->gpu_operations, expected) << var << "=" << value;
  }
  // HVD_GPU_OPERATIONS wins over Horovod's per-op knob.
  auto both = Load({{"HVD_GPU_OPERATIONS", "cpu"}, {"HOROVOD_GPU_ALLREDUCE", "NCCL"}});
  ASSERT_TRUE(both.ok());
  EXPECT_EQ(both->gpu_operations, "cpu");
  auto bad = Load({{"HOROVOD_GPU_OPERATIONS", "ddl"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("HOROVOD_GPU_OPERATIONS"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("'ddl'"), std::string::npos);
}

// Horovod's per-op GPU knobs: MPI or GLOO stage that op; NCCL or unset leave it to
// HVD_GPU_OPERATIONS; anything else is refused naming the variable.
TEST(RuntimeConfigTest, PerOpGpuKnobsStageTheirOpAndRejectOtherValues) {
  auto unset = Load({});
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_FALSE(unset->gpu_staged.allgather || unset->gpu_staged.broadcast ||
               unset->gpu_staged.alltoall || unset->gpu_staged.reducescatter);
  auto some = Load({{"HOROVOD_GPU_ALLGATHER", "MPI"},
                    {"HOROVOD_GPU_BROADCAST", "NCCL"},
                    {"HVD_GPU_ALLTOALL", "gloo"}});
  ASSERT_TRUE(some.ok()) << some.status().ToString();
  EXPECT_TRUE(some->gpu_staged.allgather);
  EXPECT_FALSE(some->gpu_staged.broadcast);
  EXPECT_TRUE(some->gpu_staged.alltoall);
  EXPECT_FALSE(some->gpu_staged.reducescatter);
  EXPECT_EQ(some->gpu_operations, "auto");
  auto bad = Load({{"HOROVOD_GPU_REDUCESCATTER", "ddl"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("HOROVOD_GPU_REDUCESCATTER"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("'ddl'"), std::string::npos);
}

// HVD_GPU_ASYNC_COMPLETION: off unless set; Horovod's HOROVOD_ENABLE_ASYNC_COMPLETION (another
// thing: the framework waits on the op's CUDA event) does not turn it on.
TEST(RuntimeConfigTest, AsyncGpuCompletionIsOffUnlessSetAndBadValuesNameIt) {
  auto unset = Load({{"HOROVOD_ENABLE_ASYNC_COMPLETION", "1"}});
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_FALSE(unset->gpu_async_completion);
  auto on = Load({{"HVD_GPU_ASYNC_COMPLETION", "1"}});
  ASSERT_TRUE(on.ok()) << on.status().ToString();
  EXPECT_TRUE(on->gpu_async_completion);
  auto bad = Load({{"HVD_GPU_ASYNC_COMPLETION", "soon"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("HVD_GPU_ASYNC_COMPLETION"), std::string::npos)
      << bad.status().message();
}

// NCCL_HOSTID names the rank's machine for the GPU path's decision, as it does for NCCL.
TEST(RuntimeConfigTest, TheNcclHostIdARankDeclaresIsItsGpuHost) {
  auto unset = Load({});
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_EQ(unset->gpu_host_id, "");
  auto set = Load({{"NCCL_HOSTID", "rank-3"}});
  ASSERT_TRUE(set.ok()) << set.status().ToString();
  EXPECT_EQ(set->gpu_host_id, "rank-3");
}

TEST(RuntimeConfigTest, HierarchicalAllreduceIsAutoUnlessSetAndNeedsTheAutoTransport) {
  auto unset = Load({});
  ASSERT_TRUE(unset.ok()) << unset.status().ToString();
  EXPECT_EQ(unset->hierarchical_allreduce, "auto");
  EXPECT_FALSE(unset->hierarchical_allgather);
  for (auto [value, expected] : {std::pair{"1", "on"}, std::pair{"true", "on"},
                                 std::pair{"0", "off"}, std::pair{"auto", "auto"}}) {
    auto c = Load({{"HOROVOD_HIERARCHICAL_ALLREDUCE", value}, {"HVD_CPU_OPERATIONS", "auto"}});
    ASSERT_TRUE(c.ok()) << value << ": " << c.status().ToString();
    EXPECT_EQ(c->hierarchical_allreduce, expected) << value;
  }
  auto bad = Load({{"HVD_HIERARCHICAL_ALLREDUCE", "sometimes"}});
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("HVD_HIERARCHICAL_ALLREDUCE"), std::string::npos)
      << bad.status().message();
  // Forcing the hierarchy with another transport is refused, naming the transport.
  auto tcp = Load({{"HVD_HIERARCHICAL_ALLREDUCE", "1"}, {"HVD_CPU_OPERATIONS", "tcp"}});
  EXPECT_EQ(tcp.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(tcp.status().message().find("not 'tcp'"), std::string::npos) << tcp.status().message();
  auto gather = Load({{"HVD_HIERARCHICAL_ALLGATHER", "1"}, {"HVD_CPU_OPERATIONS", "gloo"}});
  EXPECT_EQ(gather.status().code(), StatusCode::kInvalidArgument);
}

TEST(RuntimeConfigTest, MpirunTopologyComesFromOpenMpiAndDefaultsToTheMpiBackend) {
  // Given what Open MPI's mpirun exports for rank 3 of 4 on two hosts of two slots
  auto c = Load({{"OMPI_COMM_WORLD_RANK", "3"},
                 {"OMPI_COMM_WORLD_SIZE", "4"},
                 {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                 {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Then the topology is Open MPI's and MPI does control and data (Horovod's default)
  EXPECT_TRUE(c->launched_by_mpirun);
  EXPECT_EQ(c->rank, 3);
  EXPECT_EQ(c->size, 4);
  EXPECT_EQ(c->local_rank, 1);
  EXPECT_EQ(c->local_size, 2);
  EXPECT_EQ(c->cross_rank, 1);
  EXPECT_EQ(c->cross_size, 2);
  EXPECT_EQ(c->controller, "mpi");
  EXPECT_EQ(c->cpu_operations, "mpi");
  // And an explicit choice is kept (Gloo data under the MPI controller)
  auto gloo = Load({{"OMPI_COMM_WORLD_RANK", "0"},
                    {"OMPI_COMM_WORLD_SIZE", "2"},
                    {"OMPI_COMM_WORLD_LOCAL_RANK", "0"},
                    {"OMPI_COMM_WORLD_LOCAL_SIZE", "2"},
                    {"HOROVOD_CPU_OPERATIONS", "GLOO"}});
  ASSERT_TRUE(gloo.ok()) << gloo.status().ToString();
  EXPECT_EQ(gloo->controller, "mpi");
  EXPECT_EQ(gloo->cpu_operations, "gloo");
}

// MPICH's and Intel MPI's mpirun (Hydra) export PMI_* and MPI_LOCAL*: until 2026-12-01 they
// were not read, and every rank of `mpirun -np 2` ran alone as rank 0 of 1.
TEST(RuntimeConfigTest, MpirunTopologyComesFromHydrasPmiVariablesToo) {
  auto c = Load(
      {{"PMI_RANK", "3"}, {"PMI_SIZE", "4"}, {"MPI_LOCALRANKID", "1"}, {"MPI_LOCALNRANKS", "2"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_TRUE(c->launched_by_mpirun);
  EXPECT_EQ(c->topology_source, "PMI_RANK/PMI_SIZE");
  EXPECT_EQ(c->rank, 3);
  EXPECT_EQ(c->size, 4);
  EXPECT_EQ(c->local_rank, 1);
  EXPECT_EQ(c->local_size, 2);
  EXPECT_EQ(c->cross_rank, 1);
  EXPECT_EQ(c->controller, "mpi");
  // A launcher that gives no local rank is refused naming the variable as not set (it read
  // "expected an integer in [0, 1], got ''" until 2026-12-02)
  auto no_local = Load({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}});
  ASSERT_FALSE(no_local.ok());
  EXPECT_NE(
      no_local.status().message().find("MPI_LOCALNRANKS is not set, but PMI_RANK and PMI_SIZE are"),
      std::string::npos)
      << no_local.status().message();
  auto no_local_rank = Load({{"PMI_RANK", "0"}, {"PMI_SIZE", "2"}, {"MPI_LOCALNRANKS", "2"}});
  ASSERT_FALSE(no_local_rank.ok());
  EXPECT_NE(no_local_rank.status().message().find("MPI_LOCALRANKID is not set"), std::string::npos)
      << no_local_rank.status().message();
  // One rank (a singleton's PMI_SIZE=1) and hvdrun's own variables are not mpirun's
  auto one = Load({{"PMI_RANK", "0"}, {"PMI_SIZE", "1"}});
  ASSERT_TRUE(one.ok()) << one.status().ToString();
  EXPECT_FALSE(one->launched_by_mpirun);
  auto hvdrun = Load({{"HVD_RANK", "1"}, {"HVD_SIZE", "2"}, {"PMI_RANK", "5"}, {"PMI_SIZE", "8"}});
  ASSERT_TRUE(hvdrun.ok()) << hvdrun.status().ToString();
  EXPECT_FALSE(hvdrun->launched_by_mpirun);
  EXPECT_EQ(hvdrun->rank, 1);
}

TEST(RuntimeConfigTest, HvdrunsTopologyWinsOverOpenMpisAndBadValuesNameTheVariable) {
  // Given HVD_RANK (hvdrun) and OMPI variables (an enclosing mpirun job)
  auto c = Load({{"HVD_RANK", "1"}, {"HVD_SIZE", "2"}, {"OMPI_COMM_WORLD_RANK", "7"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_FALSE(c->launched_by_mpirun);
  EXPECT_EQ(c->rank, 1);
  EXPECT_EQ(c->controller, "gloo");
  // A malformed Open MPI value and an unknown controller are refused by name
  auto bad = Load({{"OMPI_COMM_WORLD_RANK", "0"}, {"OMPI_COMM_WORLD_SIZE", "two"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("OMPI_COMM_WORLD_SIZE"), std::string::npos);
  auto controller = Load({{"HVD_CONTROLLER", "nccl"}});
  ASSERT_FALSE(controller.ok());
  EXPECT_NE(controller.status().message().find("HVD_CONTROLLER"), std::string::npos);
}

TEST(RuntimeConfigTest, CpuOperationsDefaultsToAutoAndUnknownValuesAreRefusedByName) {
  auto c = Load({});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->cpu_operations, "auto");
  auto upper = Load({{"HOROVOD_CPU_OPERATIONS", "TCP"}});
  ASSERT_TRUE(upper.ok()) << upper.status().ToString();
  EXPECT_EQ(upper->cpu_operations, "tcp");
  // Horovod's ccl does not exist here: an error naming the variable and the choices
  auto bad = Load({{"HOROVOD_CPU_OPERATIONS", "ccl"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("HOROVOD_CPU_OPERATIONS"), std::string::npos)
      << bad.status().message();
  EXPECT_NE(bad.status().message().find("expected auto, shm, tcp, gloo or mpi, got 'ccl'"),
            std::string::npos)
      << bad.status().message();
}

TEST(RuntimeConfigTest, AutotuneKnobsAndWhichKnobsTheUserFixed) {
  // Given HOROVOD_AUTOTUNE with a schedule and an explicit fusion threshold
  auto c = Load({{"HOROVOD_AUTOTUNE", "1"},
                 {"HOROVOD_AUTOTUNE_LOG", "/tmp/at.csv"},
                 {"HVD_AUTOTUNE_WARMUP_SAMPLES", "1"},
                 {"HVD_AUTOTUNE_STEPS_PER_SAMPLE", "2"},
                 {"HVD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "4"},
                 {"HVD_AUTOTUNE_CACHE", "/tmp/at.json"},
                 {"HOROVOD_FUSION_THRESHOLD", "1048576"},
                 {"HOROVOD_TIMELINE", "DYNAMIC"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  // Then the schedule is read and only the fusion threshold is fixed
  EXPECT_TRUE(c->autotune.enabled);
  EXPECT_EQ(c->autotune.log_path, "/tmp/at.csv");
  EXPECT_EQ(c->autotune.cache_path, "/tmp/at.json");
  EXPECT_EQ(c->autotune.warmup_samples, 1);
  EXPECT_EQ(c->autotune.steps_per_sample, 2);
  EXPECT_EQ(c->autotune.bayes_opt_max_samples, 4);
  EXPECT_TRUE(c->autotune.fusion_threshold_fixed);
  EXPECT_FALSE(c->autotune.cycle_time_fixed);
  EXPECT_FALSE(c->autotune.cache_fixed);
  EXPECT_EQ(c->timeline_path, "DYNAMIC");
  // And a noise outside [0, 1] is refused naming the variable
  auto bad = Load({{"HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", "2"}});
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("HVD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE"), std::string::npos)
      << bad.status().message();
}

TEST(RuntimeConfigTest, ReadsHorovodAliasesAndCanonicalNames) {
  auto c = Load({{"HOROVOD_RANK", "2"},
                 {"HVD_SIZE", "4"},
                 {"HOROVOD_CYCLE_TIME", "2.5"},
                 {"HOROVOD_FUSION_THRESHOLD", "0"},
                 {"HVD_DYNAMIC_PROCESS_SETS", "1"},
                 {"HOROVOD_LOG_LEVEL", "debug"}});
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->rank, 2);
  EXPECT_EQ(c->size, 4);
  EXPECT_EQ(c->cycle_time, std::chrono::microseconds(2500));
  EXPECT_EQ(c->fusion_threshold_bytes, 0);
  EXPECT_TRUE(c->dynamic_process_sets);
  EXPECT_EQ(c->log_level, log::Level::kDebug);
}

TEST(RuntimeConfigTest, EagerAllreduceLimitDefaultsTo32KiBAndZeroTurnsItOff) {
  auto d = Load({});
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->eager_allreduce_bytes, 32768);
  auto off = Load({{"HVD_EAGER_ALLREDUCE_BYTES", "0"}});
  ASSERT_TRUE(off.ok()) << off.status().ToString();
  EXPECT_EQ(off->eager_allreduce_bytes, 0);
  auto most = Load({{"HVD_EAGER_ALLREDUCE_BYTES", "1048576"}});
  ASSERT_TRUE(most.ok()) << most.status().ToString();
  EXPECT_EQ(most->eager_allreduce_bytes, 1048576);
}

TEST(RuntimeConfigTest, AnUnknownLogLevelIsWarningAsInHorovod) {
  auto c = LoadRuntimeConfig(env::Environment::FromMap({{"HOROVOD_LOG_LEVEL", "loud"}}));
  ASSERT_TRUE(c.ok()) << c.status().ToString();
  EXPECT_EQ(c->log_level, log::Level::kWarning);
  EXPECT_NE(c->log_level_warning.find("HOROVOD_LOG_LEVEL: unknown log level 'loud'"),
            std::string::npos)
      << c->log_level_warning;
  EXPECT_NE(c->log_level_warning.find("using WARNING"), std::string::npos);
}

TEST(RuntimeConfigTest, BadValuesNameTheVariable) {
  struct Case {
    std::map<std::string, std::string> vars;
    std::string expect;
  };
  std::vector<Case> cases = {
      {{{"HVD_FUSION_THRESHOLD", "lots"}}, "HVD_FUSION_THRESHOLD"},
      {{{"HOROVOD_CACHE_CAPACITY", "-1"}}, "HOROVOD_CACHE_CAPACITY"},
      {{{"HVD_SIZE", "2"}, {"HVD_RANK", "2"}}, "HVD_RANK"},
      {{{"HVD_CYCLE_TIME", "-3"}}, "HVD_CYCLE_TIME"},
      {{{"HVD_STALL_CHECK_TIME_SECONDS", "x"}}, "HVD_STALL_CHECK_TIME_SECONDS"},
      {{{"HVD_RENDEZVOUS_ADDR", "10.0.0.1"}}, "HVD_RENDEZVOUS_PORT"},
      // Named as set (the fuzz target `environment` found the canonical name in its place).
      {{{"HOROVOD_GLOO_RENDEZVOUS_ADDR", "10.0.0.1"}},
       "HOROVOD_GLOO_RENDEZVOUS_ADDR is set ('10.0.0.1'), but no rendezvous port is"},
      {{{"HVD_HEARTBEAT_TIMEOUT_SECONDS", "soon"}}, "HVD_HEARTBEAT_TIMEOUT_SECONDS"},
      {{{"HVD_HEARTBEAT_TIMEOUT_SECONDS", "-1"}}, "HVD_HEARTBEAT_TIMEOUT_SECONDS"},
      {{{"HVD_SHM_SINGLE_COPY_BYTES", "-1"}}, "HVD_SHM_SINGLE_COPY_BYTES"},
      {{{"HVD_SHM_SINGLE_COPY_BYTES", "2M"}}, "HVD_SHM_SINGLE_COPY_BYTES"},
      {{{"HVD_SHM_SINGLE_COPY", "sometimes"}}, "HVD_SHM_SINGLE_COPY"},
      {{{"HVD_TCP_CONGESTION", "Cubic"}}, "HVD_TCP_CONGESTION"},
      {{{"HVD_TCP_CONGESTION", "bbr; rm -rf"}}, "HVD_TCP_CONGESTION"},
      {{{"HVD_TCP_CONGESTION", "a_name_of_16chrs"}}, "HVD_TCP_CONGESTION"},
      {{{"HVD_EAGER_ALLREDUCE_BYTES", "-1"}}, "HVD_EAGER_ALLREDUCE_BYTES"},
      {{{"HVD_EAGER_ALLREDUCE_BYTES", "2097152"}}, "HVD_EAGER_ALLREDUCE_BYTES"},
      {{{"HVD_EAGER_ALLREDUCE_BYTES", "32K"}}, "HVD_EAGER_ALLREDUCE_BYTES"},
      {{{"HVD_SHM_DIRECT_BYTES", "-1"}}, "HVD_SHM_DIRECT_BYTES"},
      {{{"HVD_SHM_DIRECT_BYTES", "65537"}}, "HVD_SHM_DIRECT_BYTES"},
      {{{"HVD_SHM_DIRECT_BYTES", "4K"}}, "HVD_SHM_DIRECT_BYTES"},
      {{{"HVD_TCP_HALVING_BYTES", "-1"}}, "HVD_TCP_HALVING_BYTES"},
      {{{"HVD_TCP_HALVING_BYTES", "64K"}}, "HVD_TCP_HALVING_BYTES"},
      {{{"HVD_TCP_HALVING_BYTES", "never"}}, "HVD_TCP_HALVING_BYTES"},
      {{{"HVD_OUTPUT_CACHE_BYTES", "-1"}}, "HVD_OUTPUT_CACHE_BYTES"},
      {{{"HVD_OUTPUT_CACHE_BYTES", "1G"}}, "HVD_OUTPUT_CACHE_BYTES"},
  };
  for (const auto& c : cases) {
    auto r = Load(c.vars);
    ASSERT_FALSE(r.ok()) << c.expect;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
    EXPECT_NE(r.status().message().find(c.expect), std::string::npos) << r.status().message();
  }
}

}  // namespace
}  // namespace hvd::runtime
