#include "launcher/plan/job_plan.h"

#include <gtest/gtest.h>

#include "launcher/dry_run.h"
#include "launcher/local/local_host.h"
#include "launcher/worker/worker_env.h"

namespace hvd::launcher {
namespace {

LaunchSpec Spec(std::string hosts, int np) {
  LaunchSpec spec;
  spec.command = {"python3", "train.py", "--name", "it's"};
  spec.hosts = std::move(hosts);
  spec.num_proc = np;
  return spec;
}

env::Environment NoScheduler() { return env::Environment::FromMap({}); }

TEST(LocalHostTest, RecognisesThisMachine) {
  EXPECT_TRUE(IsLocalHost("localhost"));
  EXPECT_TRUE(IsLocalHost("LOCALHOST"));
  EXPECT_TRUE(IsLocalHost("127.0.0.1"));
  EXPECT_TRUE(IsLocalHost("127.1.2.3"));
  EXPECT_TRUE(IsLocalHost("::1"));
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof(name) - 1), 0);
  EXPECT_TRUE(IsLocalHost(name));
  EXPECT_FALSE(IsLocalHost("192.0.2.1"));  // TEST-NET-1, never local
}

TEST(JobPlanTest, PlansLocalRanks) {
  Result<JobPlan> plan = PlanJob(Spec("localhost:4", 4), NoScheduler());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  ASSERT_EQ(plan->ranks.size(), 4u);
  EXPECT_EQ(plan->ranks[3].local_rank, 3);
  EXPECT_EQ(plan->ranks[3].local_size, 4);
}

TEST(JobPlanTest, MoreProcessesThanSlotsNamesBothNumbers) {
  Result<JobPlan> plan = PlanJob(Spec("localhost:2", 5), NoScheduler());
  ASSERT_FALSE(plan.ok());
  EXPECT_NE(plan.status().message().find('5'), std::string::npos) << plan.status().message();
  EXPECT_NE(plan.status().message().find('2'), std::string::npos) << plan.status().message();
}

TEST(JobPlanTest, HostsThatAreNotThisMachineAreRemote) {
  Result<JobPlan> plan = PlanJob(Spec("localhost:1,192.0.2.1:2,127.0.0.1:1", 4), NoScheduler());
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->remote_hosts, std::vector<std::string>{"192.0.2.1"});
  EXPECT_TRUE(plan->IsRemote("192.0.2.1"));
  EXPECT_FALSE(plan->IsRemote("localhost"));
}

// A one-task Slurm (or LSF) job on this machine with -np 4 (one task, four GPUs): four ranks
// here, as horovodrun runs them (it reads no allocation); until 2026-12-01 an error ("the hosts
// provide only 1 slots"). An allocation that names other nodes too is kept as it is.
TEST(JobPlanTest, AOneMachineAllocationSmallerThanNpRunsNpRanksHere) {
  char name[256] = {};
  ASSERT_EQ(gethostname(name, sizeof(name) - 1), 0);
  const auto slurm = [&](std::string nodelist, std::string tasks) {
    return env::Environment::FromMap(
        {{"SLURM_JOB_NODELIST", nodelist}, {"SLURM_TASKS_PER_NODE", tasks}, {"SLURM_NTASKS", "1"}});
  };
  Result<JobPlan> plan = PlanJob(Spec("", 4), slurm(name, "1"));
  ASSERT_TRUE(plan.ok()) << plan.status().ToString();
  EXPECT_EQ(plan->ranks.size(), 4u);
  EXPECT_TRUE(plan->remote_hosts.empty());
  EXPECT_NE(plan->allocation_note.find("gives this machine 1 task(s); -np 4 runs 4 ranks here"),
            std::string::npos)
      << plan->allocation_note;
  LaunchSpec lsf_spec = Spec("", 3);
  Result<JobPlan> lsf =
      PlanJob(lsf_spec, env::Environment::FromMap(
                            {{"LSB_JOBID", "1"}, {"LSB_MCPU_HOSTS", std::string(name) + " 1"}}));
  ASSERT_TRUE(lsf.ok()) << lsf.status().ToString();
  EXPECT_EQ(lsf->ranks.size(), 3u);
  // Two nodes: the allocation's slots stand
  Result<JobPlan> two = PlanJob(Spec("", 4), slurm(std::string(name) + ",192.0.2.1", "1(x2)"));
  EXPECT_FALSE(two.ok());
}

TEST(JobPlanTest, UnbuiltFeaturesAreRejected) {
  LaunchSpec jsrun = Spec("localhost:2", 2);
  jsrun.controller = Controller::kJsrun;
  EXPECT_NE(PlanJob(jsrun, NoScheduler()).status().message().find("--jsrun"), std::string::npos);
  LaunchSpec empty = Spec("localhost:2", 2);
  empty.command.clear();
  EXPECT_FALSE(PlanJob(empty, NoScheduler()).ok());
}

TEST(DryRunTest, ShowsPlanCommandAndEnvironmentWithoutSecrets) {
  LaunchSpec spec = Spec("localhost:2", 2);
  spec.worker_env = {{"HVD_FUSION_THRESHOLD", "1024"}};
  Result<JobPlan> plan = PlanJob(spec, NoScheduler());
  ASSERT_TRUE(plan.ok());
  JobEnvContext job;
  job.size = 2;
  job.secret_fd = "<descriptor>";
  std::map<int, EnvMap> rank_envs;
  for (const discovery::RankInfo& rank : plan->ranks) {
    rank_envs[rank.rank] = BuildWorkerEnv({}, spec.worker_env, rank, job);
  }
  std::string text = FormatDryRun(spec, *plan, job, rank_envs, {});
  EXPECT_NE(text.find("rank  host"), std::string::npos) << text;
  EXPECT_NE(text.find("command: python3 train.py --name 'it'\\''s'"), std::string::npos) << text;
  EXPECT_NE(text.find("HVD_RANK=1"), std::string::npos) << text;
  EXPECT_NE(text.find("HVD_FUSION_THRESHOLD=1024"), std::string::npos) << text;
  EXPECT_NE(text.find("HVD_SECRET_FD='<descriptor>'"), std::string::npos) << text;
}

}  // namespace
}  // namespace hvd::launcher
