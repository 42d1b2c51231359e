#include "launcher/worker/worker_env.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

discovery::RankInfo Rank3() {
  discovery::RankInfo rank;
  rank.rank = 3;
  rank.local_rank = 1;
  rank.local_size = 2;
  rank.cross_rank = 1;
  rank.cross_size = 2;
  rank.host = "localhost";
  return rank;
}

JobEnvContext Job() {
  JobEnvContext job;
  job.size = 4;
  job.rendezvous_addr = "127.0.0.1";
  job.rendezvous_port = "4242";
  job.master_addr = "127.0.0.1";
  job.master_port = "5151";
  job.job_id = "abc123";
  job.secret_fd = "7";
  job.runtime_library = "/opt/hvd/lib/libhvd.so";
  return job;
}

TEST(WorkerEnvTest, SetsRankVariablesWithHorovodAndTorchrunNames) {
  EnvMap env = BuildWorkerEnv({}, {}, Rank3(), Job());
  EXPECT_EQ(env["HVD_RANK"], "3");
  EXPECT_EQ(env["HOROVOD_RANK"], "3");
  EXPECT_EQ(env["HVD_SIZE"], "4");
  EXPECT_EQ(env["HOROVOD_SIZE"], "4");
  EXPECT_EQ(env["HVD_LOCAL_RANK"], "1");
  EXPECT_EQ(env["HOROVOD_LOCAL_SIZE"], "2");
  EXPECT_EQ(env["HVD_CROSS_RANK"], "1");
  EXPECT_EQ(env["HOROVOD_CROSS_SIZE"], "2");
  EXPECT_EQ(env["HVD_HOSTNAME"], "localhost");
  EXPECT_EQ(env["HOROVOD_HOSTNAME"], "localhost");
  EXPECT_EQ(env["RANK"], "3");
  EXPECT_EQ(env["WORLD_SIZE"], "4");
  EXPECT_EQ(env["LOCAL_RANK"], "1");
  EXPECT_EQ(env["LOCAL_WORLD_SIZE"], "2");
  EXPECT_EQ(env["MASTER_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["MASTER_PORT"], "5151");
  EXPECT_EQ(env["HVD_RENDEZVOUS_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["HVD_RENDEZVOUS_PORT"], "4242");
  EXPECT_EQ(env["HOROVOD_GLOO_RENDEZVOUS_ADDR"], "127.0.0.1");
  EXPECT_EQ(env["HOROVOD_GLOO_RENDEZVOUS_PORT"], "4242");
  EXPECT_EQ(env["HVD_JOB_ID"], "abc123");
  EXPECT_EQ(env["HVD_SECRET_FD"], "7");
  EXPECT_EQ(env["HVD_CONTROLLER"], "gloo");
  EXPECT_EQ(env["HOROVOD_CPU_OPERATIONS"], "auto");
  EXPECT_EQ(env["PYTHONUNBUFFERED"], "1");
  EXPECT_EQ(env["HVD_RUNTIME_LIBRARY"], "/opt/hvd/lib/libhvd.so");
}

TEST(WorkerEnvTest, LayersLauncherEnvThenKnobsThenRankVariables) {
  EnvMap launcher = {{"PATH", "/bin"}, {"HVD_FUSION_THRESHOLD", "1"}, {"HVD_RANK", "99"}};
  EnvMap knobs = {{"HVD_FUSION_THRESHOLD", "2"}, {"HOROVOD_FUSION_THRESHOLD", "2"}};
  EnvMap env = BuildWorkerEnv(launcher, knobs, Rank3(), Job());
  EXPECT_EQ(env["PATH"], "/bin");
  EXPECT_EQ(env["HVD_FUSION_THRESHOLD"], "2");
  EXPECT_EQ(env["HOROVOD_FUSION_THRESHOLD"], "2");
  EXPECT_EQ(env["HVD_RANK"], "3");
}

TEST(WorkerEnvTest, UserExportedMasterAddressAndPortWin) {
  // Given torchrun's store address and port exported to hvdrun (a port the firewall opens)
  const EnvMap launcher = {{"MASTER_ADDR", "node7"}, {"MASTER_PORT", "29500"}};
  JobEnvContext job = Job();
  job.master_addr = UsersMasterSetting(launcher, "MASTER_ADDR").value_or(job.master_addr);
  job.master_port = UsersMasterSetting(launcher, "MASTER_PORT").value_or(job.master_port);
  // Then the ranks get them instead of hvdrun's choice, each on its own
  EnvMap env = BuildWorkerEnv(launcher, {}, Rank3(), job);
  EXPECT_EQ(env["MASTER_ADDR"], "node7");
  EXPECT_EQ(env["MASTER_PORT"], "29500");
  EXPECT_EQ(UsersMasterSetting({{"MASTER_PORT", "29500"}, {"MASTER_ADDR", ""}}, "MASTER_ADDR"),
            std::nullopt);
  EXPECT_EQ(UsersMasterSetting({}, "MASTER_PORT"), std::nullopt);
  // and a remote rank too (hvdrun's environment is passed on)
  EnvMap remote = BuildRemoteWorkerEnv(launcher, {}, Rank3(), job);
  EXPECT_EQ(remote["MASTER_PORT"], "29500");
}

// The launch node's GPU list is its own: a remote rank keeps its host's (Horovod never exports
// *CUDA_VISIBLE_DEVICES; forwarded until 2026-12-01). A local rank inherits it as any variable.
TEST(WorkerEnvTest, CudaVisibleDevicesStaysOnTheLaunchNode) {
  const EnvMap launcher = {{"CUDA_VISIBLE_DEVICES", "2,3"}, {"MY_CUDA_VISIBLE_DEVICES", "1"}};
  EnvMap remote = BuildRemoteWorkerEnv(launcher, {}, Rank3(), Job());
  EXPECT_EQ(remote.count("CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(remote.count("MY_CUDA_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(BuildWorkerEnv(launcher, {}, Rank3(), Job())["CUDA_VISIBLE_DEVICES"], "2,3");
}

TEST(WorkerEnvTest, UserExportedCpuOperationsWins) {
  // Given HVD_CPU_OPERATIONS=tcp (or Horovod's name) exported to hvdrun
  EnvMap env = BuildWorkerEnv({{"HVD_CPU_OPERATIONS", "tcp"}}, {}, Rank3(), Job());
  // Then both names carry it to the worker instead of the default
  EXPECT_EQ(env["HVD_CPU_OPERATIONS"], "tcp");
  EXPECT_EQ(env["HOROVOD_CPU_OPERATIONS"], "tcp");
  env = BuildWorkerEnv({{"HOROVOD_CPU_OPERATIONS", "tcp"}}, {}, Rank3(), Job());
  EXPECT_EQ(env["HVD_CPU_OPERATIONS"], "tcp");
}

// NCCL tells machines apart as hvd does (the host name as given), unless the user set it.
TEST(WorkerEnvTest, NcclHostIdIsTheRanksHostUnlessTheUserSetIt) {
  EXPECT_EQ(BuildWorkerEnv({}, {}, Rank3(), Job())["NCCL_HOSTID"], "localhost");
  discovery::RankInfo other = Rank3();
  other.host = "127.0.0.1";
  EXPECT_EQ(BuildWorkerEnv({}, {}, other, Job())["NCCL_HOSTID"], "127.0.0.1");
  EXPECT_EQ(BuildWorkerEnv({{"NCCL_HOSTID", "mine"}}, {}, other, Job())["NCCL_HOSTID"], "mine");
  // hvdrun run by a rank of another job inherits that rank's NCCL_HOSTID (its host): not the
  // user's, so each rank of the inner job still gets its own host's
  const EnvMap enclosing = {
      {"NCCL_HOSTID", "localhost"}, {"HVD_HOSTNAME", "localhost"}, {"HVD_JOB_ID", "b9143e6c"}};
  EXPECT_EQ(BuildWorkerEnv(enclosing, {}, other, Job())["NCCL_HOSTID"], "127.0.0.1");
  EnvMap mine_inside = enclosing;
  mine_inside["NCCL_HOSTID"] = "mine";  // the user's own, exported inside that rank
  EXPECT_EQ(BuildWorkerEnv(mine_inside, {}, other, Job())["NCCL_HOSTID"], "mine");
}

TEST(WorkerEnvTest, UserSetRuntimeLibraryWins) {
  EnvMap env = BuildWorkerEnv({{"HVD_RUNTIME_LIBRARY", "/mine.so"}}, {}, Rank3(), Job());
  EXPECT_EQ(env["HVD_RUNTIME_LIBRARY"], "/mine.so");
  env = BuildWorkerEnv({}, {{"HVD_RUNTIME_LIBRARY", "/knob.so"}}, Rank3(), Job());
  EXPECT_EQ(env["HVD_RUNTIME_LIBRARY"], "/knob.so");
}

TEST(WorkerEnvTest, NoRuntimeLibraryFoundLeavesTheVariableUnset) {
  JobEnvContext job = Job();
  job.runtime_library.reset();
  EnvMap env = BuildWorkerEnv({}, {}, Rank3(), job);
  EXPECT_EQ(env.count("HVD_RUNTIME_LIBRARY"), 0u);
}

TEST(WorkerEnvTest, TheThreadsShareDividesTheMachinesCoresAmongItsRanks) {
  discovery::RankInfo rank;
  rank.local_size = 1;  // alone on its host name, as with -H localhost:1,127.0.0.1:1
  JobEnvContext job;
  job.host_cores = 16;
  const EnvMap share = {{"HVD_WORKER_THREADS", "share"}};
  EXPECT_EQ(BuildWorkerEnv(share, {}, rank, job)["OMP_NUM_THREADS"], "16");
  job.ranks_here = 4;  // but four ranks on this machine
  EXPECT_EQ(BuildWorkerEnv(share, {}, rank, job)["OMP_NUM_THREADS"], "4");
  job.host_cores = 0;  // another host's: its agent computes it
  EXPECT_EQ(BuildWorkerEnv(share, {}, rank, job).count("OMP_NUM_THREADS"), 0u);
}

}  // namespace
}  // namespace hvd::launcher
