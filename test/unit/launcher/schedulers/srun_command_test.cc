#include "launcher/schedulers/srun_command.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <string>

namespace hvd::launcher {
namespace {

// A directory holding an executable `srun` (a stub; it is never run).
class FakeSrunDir {
 public:
  FakeSrunDir() {
    char tmpl[] = "/tmp/hvd-srun-test-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
    std::ofstream(dir_ + "/srun") << "#!/bin/sh\nexit 99\n";
    ::chmod((dir_ + "/srun").c_str(), 0755);
  }
  ~FakeSrunDir() {
    ::unlink((dir_ + "/srun").c_str());
    ::rmdir(dir_.c_str());
  }
  const std::string& path() const { return dir_; }

 private:
  std::string dir_;
};

env::Environment SlurmEnv(const std::string& path) {
  return env::Environment::FromMap(
      {{"SLURM_JOB_ID", "42"}, {"SLURM_JOB_NODELIST", "node[1-2],gpu7"}, {"PATH", path}});
}

TEST(DetectSrunLaunch, InsideAnAllocationWithSrunOnPathUsesIt) {
  FakeSrunDir bin;
  std::string why = "unset";
  auto launch = DetectSrunLaunch({"node2", "gpu7"}, SlurmEnv("/nonexistent:" + bin.path()), &why);
  ASSERT_TRUE(launch.has_value()) << why;
  EXPECT_EQ(launch->srun_path, bin.path() + "/srun");
  EXPECT_EQ(launch->job_id, "42");
}

TEST(DetectSrunLaunch, OutsideSlurmSaysNothing) {
  FakeSrunDir bin;
  std::string why = "unset";
  auto launch =
      DetectSrunLaunch({"node1"}, env::Environment::FromMap({{"PATH", bin.path()}}), &why);
  EXPECT_FALSE(launch.has_value());
  EXPECT_EQ(why, "");
}

TEST(DetectSrunLaunch, OldSlurmJobIdNameIsAccepted) {
  FakeSrunDir bin;
  auto launch = DetectSrunLaunch(
      {"n1"}, env::Environment::FromMap(
                  {{"SLURM_JOBID", "7"}, {"SLURM_NODELIST", "n1"}, {"PATH", bin.path()}}));
  ASSERT_TRUE(launch.has_value());
  EXPECT_EQ(launch->job_id, "7");
}

TEST(DetectSrunLaunch, HostOutsideTheAllocationFallsBackToSshNamingIt) {
  FakeSrunDir bin;
  std::string why;
  auto launch = DetectSrunLaunch({"node1", "other"}, SlurmEnv(bin.path()), &why);
  EXPECT_FALSE(launch.has_value());
  EXPECT_NE(why.find("host other is not a node of Slurm job 42 (node[1-2],gpu7)"),
            std::string::npos)
      << why;
}

// The job id goes into srun's --jobid=: one that is not Slurm's number falls back to ssh,
// saying why, its bytes shown printable.
TEST(DetectSrunLaunch, AJobIdThatIsNotANumberFallsBackToSshNamingIt) {
  FakeSrunDir bin;
  for (const std::string bad : {"42 --uid=0", "-1", "4\x1b[2J", "12345678901234567890123"}) {
    std::string why;
    auto launch = DetectSrunLaunch(
        {"n1"},
        env::Environment::FromMap(
            {{"SLURM_JOB_ID", bad}, {"SLURM_NODELIST", "n1"}, {"PATH", bin.path()}}),
        &why);
    EXPECT_FALSE(launch.has_value()) << bad;
    EXPECT_NE(why.find("' is not a Slurm job id; using ssh"), std::string::npos) << why;
    EXPECT_EQ(why.find('\x1b'), std::string::npos) << why;
  }
}

TEST(DetectSrunLaunch, MissingSrunFallsBackToSsh) {
  std::string why;
  auto launch = DetectSrunLaunch({"node1"}, SlurmEnv("/nonexistent"), &why);
  EXPECT_FALSE(launch.has_value());
  EXPECT_NE(why.find("srun is not on PATH; using ssh"), std::string::npos) << why;
}

TEST(DetectSrunLaunch, BadNodeListFallsBackToSshQuotingIt) {
  FakeSrunDir bin;
  std::string why;
  auto launch = DetectSrunLaunch(
      {"node1"},
      env::Environment::FromMap(
          {{"SLURM_JOB_ID", "1"}, {"SLURM_JOB_NODELIST", "node[1-"}, {"PATH", bin.path()}}),
      &why);
  EXPECT_FALSE(launch.has_value());
  EXPECT_NE(why.find("node[1-"), std::string::npos) << why;
}

TEST(SrunAgentArgv, OneTaskOverlappingStepOnTheNamedNodeRunningTheAgent) {
  SrunLaunch launch{"/usr/bin/srun", "42"};
  std::vector<std::string> expected = {
      "/usr/bin/srun",       "--jobid=42",       "--nodes=1", "--ntasks=1",
      "--ntasks-per-node=1", "--nodelist=node2", "--overlap", "--job-name=hvd-agent",
      "--mpi=none",          "--unbuffered",     "--quiet",   "/opt/hvd/bin/hvd-agent"};
  EXPECT_EQ(SrunAgentArgv(launch, "node2", "/opt/hvd/bin/hvd-agent"), expected);
}

TEST(SrunAgentArgv, CarriesNoRankEnvironmentOrKey) {
  SrunLaunch launch{"/usr/bin/srun", "42"};
  for (const std::string& word : SrunAgentArgv(launch, "node1", "/a/hvd-agent")) {
    EXPECT_EQ(word.find("HVD_"), std::string::npos) << word;
    EXPECT_EQ(word.find("--export"), std::string::npos) << word;
  }
}

}  // namespace
}  // namespace hvd::launcher
