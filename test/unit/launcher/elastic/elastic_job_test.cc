// An elastic job's event loop over real processes: ElasticJob with LocalSpawner (or a spawner
// arranging how the ends arrive), a real rendezvous server on loopback, SignalChannel and
// OutputForwarder; a fixed host list (no discovery script), all on this machine.
#include "launcher/elastic/elastic_job.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "common/job_key.h"
#include "launcher/outcome/exit_codes.h"
#include "test/fakes/ending_spawners.h"
#include "test/fakes/mem_file.h"

namespace hvd::launcher {
namespace {

class ElasticJobTest : public ::testing::Test {
 protected:
  // Runs `np` workers on this machine, each `sh -c script` (the script reads its worker id
  // from $HVD_ELASTIC_WORKER_ID), started through `spawner`; returns hvdrun's exit code.
  int Run(int np, const std::string& script, RankSpawner& spawner) {
    Result<SignalChannel> signals = SignalChannel::Open();
    HVD_CHECK(signals.ok()) << signals.status().ToString();
    Result<control::JobKey> key = control::GenerateJobKey();
    HVD_CHECK(key.ok());
    LaunchSpec spec;
    spec.command = {"/bin/sh", "-c", script};
    spec.grace_period_s = 5;
    const env::Environment env = env::Environment::FromMap({{"PATH", "/usr/bin:/bin"}});
    ReadyQueue ready;
    RendezvousServerOptions server_options;
    server_options.key = *key;
    server_options.job_id = "elastic-job-test";
    Result<std::unique_ptr<RendezvousServer>> server = RendezvousServer::Start(server_options);
    HVD_CHECK(server.ok()) << server.status().ToString();
    OutputForwarder::Options output_options;
    output_options.size = 0;
    output_options.stdout_fd = out_.fd();
    output_options.stderr_fd = err_.fd();
    OutputForwarder output(output_options);
    ElasticJobContext context;
    context.spec = &spec;
    context.env = &env;
    context.job.job_id = server_options.job_id;
    context.job.rendezvous_addr = "127.0.0.1";
    context.job.rendezvous_port = std::to_string((*server)->port());
    context.server = server->get();
    context.ready = &ready;
    context.signals = &*signals;
    context.spawner = &spawner;
    context.output = &output;
    ElasticDriverOptions options;
    options.start_np = options.min_np = np;
    options.elastic_timeout = std::chrono::seconds(10);
    options.grace_period = std::chrono::seconds(1);  // removed workers still running: stopped
    int code;
    ::testing::internal::CaptureStderr();  // hvdrun's own lines
    {
      ElasticJob job(context, options);
      code = job.Run({{"localhost", np, std::nullopt}});
    }
    said_ = ::testing::internal::GetCapturedStderr();
    (*server)->Stop();
    return code;
  }

  // The failure summary's line of worker `id` ("  1     localhost  exit code 4").
  std::string SummaryLine(int id) const {
    const std::string start = "\n  " + std::to_string(id) + " ";
    size_t at = said_.rfind(start);
    if (at == std::string::npos) return "";
    return said_.substr(at + 1, said_.find('\n', at + 1) - at - 1);
  }

  MemFile out_;  // the workers' forwarded output
  MemFile err_;
  std::string said_;  // what hvdrun printed
};

// Worker `id` runs `what`; the others sleep.
std::string Case(const std::vector<std::string>& what) {
  std::string script = "case $HVD_ELASTIC_WORKER_ID in ";
  for (size_t i = 0; i < what.size(); ++i) script += std::to_string(i) + ") " + what[i] + ";; ";
  return script + "esac";
}

TEST_F(ElasticJobTest, EveryWorkerFailingEndsTheJobWithTheFirstFailuresCode) {
  LocalSpawner spawner;
  auto start = std::chrono::steady_clock::now();
  EXPECT_EQ(Run(2, Case({"exit 3", "sleep 0.3; exit 4"}), spawner), 3);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_NE(said_.find("every worker of the job failed; the first failure: worker 0 on "
                       "localhost: exit code 3; hvdrun exits 3"),
            std::string::npos)
      << said_;
  // Removed when worker 0's failure blacklisted the host, but failing before it could read
  // that: its own failure, not hvdrun's stop.
  EXPECT_EQ(SummaryLine(1).find("stopped by hvdrun"), std::string::npos) << said_;
  EXPECT_NE(SummaryLine(1).find("exit code 4"), std::string::npos) << said_;
  // The rows are workers, the first failure's marked.
  EXPECT_NE(said_.find("\n  worker  host"), std::string::npos) << said_;
  EXPECT_NE(SummaryLine(0).find("exit code 3  <- first failure"), std::string::npos) << said_;
  EXPECT_EQ(SummaryLine(1).find("first failure"), std::string::npos) << said_;
}

// Worker 2 is SIGKILLed and worker 0 then exits 1 (its collectives failed on the lost peer),
// both before the job looks: worker 2 is the first failure, not the lower worker.
TEST_F(ElasticJobTest, ASignalDeathSeenWithItsPeersExitsIsTheFirstFailure) {
  const std::string dead = "/tmp/hvd_ej_dead_" + std::to_string(getpid());
  unlink(dead.c_str());
  const std::string wait = "while [ ! -e " + dead + " ]; do sleep 0.01; done; ";
  AllEndedSpawner spawner(3);
  const int code =
      Run(3, Case({wait + "exit 1", wait + "exit 1", "touch " + dead + "; kill -9 $$"}), spawner);
  unlink(dead.c_str());
  EXPECT_EQ(code, kExitSignalBase + SIGKILL);
  EXPECT_NE(said_.find("the first failure: worker 2 on localhost: SIGKILL (signal 9)"),
            std::string::npos)
      << said_;
}

// Worker 2's process is SIGKILLed; worker 0 fails on it and is reaped before worker 2's
// guardian says so. Worker 2 is still the first failure: the job waits for the guardian.
TEST_F(ElasticJobTest, APeerFailingBeforeTheGuardianOfTheKilledWorkerReportsWaitsForIt) {
  const std::string go = "/tmp/hvd_ej_go_" + std::to_string(getpid());
  unlink(go.c_str());
  LateGuardianSpawner spawner(3);
  const int code =
      Run(3,
          Case({"while [ ! -e " + go + " ]; do sleep 0.01; done; exit 1", "sleep 30",
                "touch " + go +
                    "; while kill -0 $WAIT_PID 2>/dev/null; do sleep 0.01; done; kill -9 $$"}),
          spawner);
  unlink(go.c_str());
  EXPECT_EQ(code, kExitSignalBase + SIGKILL);
  EXPECT_NE(said_.find("the first failure: worker 2 on localhost: SIGKILL (signal 9)"),
            std::string::npos)
      << said_;
  // Worker 0 exited before the driver removed it; worker 1 was stopped after the removal.
  EXPECT_EQ(SummaryLine(0).find("stopped by hvdrun"), std::string::npos) << said_;
  EXPECT_NE(SummaryLine(1).find("SIGTERM (signal 15), stopped by hvdrun"), std::string::npos)
      << said_;
}

}  // namespace
}  // namespace hvd::launcher
