// Job control over real processes: LocalSpawner + SignalChannel + OutputForwarder.
#include "launcher/job_controller.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>

#include "launcher/local/local_spawner.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/wait_status.h"
#include "test/fakes/ending_spawners.h"
#include "test/fakes/mem_file.h"

namespace hvd::launcher {
namespace {

class JobControllerTest : public ::testing::Test {
 protected:
  // Runs one `sh -c script` per entry as ranks 0..n-1.
  JobOutcome RunScripts(const std::vector<std::string>& scripts, double grace_s = 5) {
    std::vector<std::vector<std::string>> argvs;
    for (const std::string& script : scripts) argvs.push_back({"/bin/sh", "-c", script});
    return RunAll(argvs, grace_s);
  }

  JobOutcome RunArgv(const std::vector<std::string>& argv) { return RunAll({argv}, 5); }

  JobOutcome RunAll(const std::vector<std::vector<std::string>>& argvs, double grace_s) {
    OutputForwarder::Options options;
    options.size = static_cast<int>(argvs.size());
    options.stdout_fd = out_.fd();
    options.stderr_fd = err_.fd();
    OutputForwarder output(options);
    Result<SignalChannel> signals = SignalChannel::Open();
    HVD_CHECK(signals.ok()) << signals.status().ToString();
    std::vector<SpawnRequest> requests;
    for (size_t i = 0; i < argvs.size(); ++i) {
      SpawnRequest request;
      request.rank = static_cast<int>(i);
      request.host = "localhost";
      request.argv = argvs[i];
      request.env = {{"PATH", "/usr/bin:/bin"}, {"R", std::to_string(i)}};
      requests.push_back(request);
    }
    LocalSpawner local;
    JobControlOptions control{30, grace_s, false};
    control.shutdown_cause = shutdown_cause_;
    JobController controller(control, spawner_ != nullptr ? *spawner_ : local, output, *signals);
    JobOutcome outcome = controller.Run(requests);
    tails_.clear();
    for (size_t i = 0; i < argvs.size(); ++i)
      tails_.push_back(output.StderrTail(static_cast<int>(i)));
    return outcome;
  }

  // Runs `requests` with `spawner` under `control`, hvdrun's output into out_ / err_.
  JobOutcome RunRequests(const std::vector<SpawnRequest>& requests, RankSpawner& spawner,
                         JobControlOptions control) {
    OutputForwarder::Options options;
    options.size = static_cast<int>(requests.size());
    options.stdout_fd = out_.fd();
    options.stderr_fd = err_.fd();
    OutputForwarder output(options);
    Result<SignalChannel> signals = SignalChannel::Open();
    HVD_CHECK(signals.ok()) << signals.status().ToString();
    return JobController(control, spawner, output, *signals).Run(requests);
  }

  MemFile out_;  // hvdrun's stdout and stderr
  MemFile err_;
  std::vector<std::vector<std::string>> tails_;
  std::function<std::optional<int>(int)> shutdown_cause_;  // JobControlOptions::shutdown_cause
  RankSpawner* spawner_ = nullptr;                         // null: a LocalSpawner
};

TEST_F(JobControllerTest, AllRanksSucceed) {
  JobOutcome outcome = RunScripts({"echo zero", "echo one"});
  EXPECT_EQ(ExitCodeOf(outcome), kExitOk);
  std::string out = out_.Contents();
  EXPECT_NE(out.find("[0]<stdout>:zero\n"), std::string::npos) << out;
  EXPECT_NE(out.find("[1]<stdout>:one\n"), std::string::npos) << out;
}

TEST_F(JobControllerTest, FirstFailureEndsTheJobWithItsCode) {
  auto start = std::chrono::steady_clock::now();
  JobOutcome outcome = RunScripts({"sleep 30", "echo bad >&2; exit 3"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(ExitCodeOf(outcome), 3);
  ASSERT_TRUE(outcome.first_failed_rank.has_value());
  EXPECT_EQ(*outcome.first_failed_rank, 1);
  EXPECT_TRUE(outcome.ranks[0].stopped_by_hvdrun);
  EXPECT_EQ(DescribeWaitStatus(outcome.ranks[0].wait_status), "SIGTERM (signal 15)");
  EXPECT_EQ(tails_[1], std::vector<std::string>{"bad"});
}

// Rank 0 runs `first` once rank 1 has started, rank 1 `then` once rank 0 is about to.
std::vector<std::string> InOrder(const std::string& first, const std::string& then) {
  const std::string dir = "/tmp/hvd_jc_order_" + std::to_string(getpid());
  const std::string wait = "while [ ! -e " + dir + "/";
  return {"mkdir -p " + dir + "; " + wait + "started ]; do sleep 0.01; done; touch " + dir +
              "/first; rm -rf " + dir + "; " + first,
          "mkdir -p " + dir + "; touch " + dir + "/started; " + wait + "first ] && [ -d " + dir +
              " ]; do sleep 0.01; done; " + then};
}

// Rank 0 fails at once and says rank 1's shutdown failed it (as a bystander of an agreed
// shutdown does); rank 1 is in its own exit, sys.exit(7) say.
TEST_F(JobControllerTest, ThePeerWhoseShutdownFailedTheFirstFailureIsNamedWithItsCode) {
  shutdown_cause_ = [](int rank) { return rank == 0 ? std::optional<int>(1) : std::nullopt; };
  JobOutcome outcome = RunScripts(InOrder("exit 1", "sleep 0.5; exit 7"));
  EXPECT_EQ(ExitCodeOf(outcome), 7);
  ASSERT_TRUE(outcome.first_failed_rank.has_value());
  EXPECT_EQ(*outcome.first_failed_rank, 1);
  EXPECT_EQ(outcome.exited_before_cause, std::optional<int>(0));
  EXPECT_FALSE(outcome.ranks[0].stopped_by_hvdrun);
  EXPECT_FALSE(outcome.ranks[1].stopped_by_hvdrun);
}

TEST_F(JobControllerTest, APeerThatShutDownAndExitsCleanlyLeavesTheFirstFailureFirst) {
  shutdown_cause_ = [](int rank) { return rank == 0 ? std::optional<int>(1) : std::nullopt; };
  JobOutcome outcome = RunScripts(InOrder("exit 1", "sleep 0.5; exit 0"));
  EXPECT_EQ(ExitCodeOf(outcome), 1);
  EXPECT_EQ(outcome.first_failed_rank, std::optional<int>(0));
  EXPECT_FALSE(outcome.exited_before_cause.has_value());
}

TEST_F(JobControllerTest, APeerThatShutDownButKeepsRunningGetsSigtermAfterHalfTheGrace) {
  shutdown_cause_ = [](int rank) { return rank == 0 ? std::optional<int>(1) : std::nullopt; };
  const auto start = std::chrono::steady_clock::now();
  JobOutcome outcome = RunScripts({"sleep 0.3; exit 1", "sleep 30", "sleep 30"}, 2);
  const auto took = std::chrono::steady_clock::now() - start;
  EXPECT_EQ(ExitCodeOf(outcome), 1);
  EXPECT_EQ(outcome.first_failed_rank, std::optional<int>(0));
  // Rank 2 got SIGTERM at once, rank 1 a second (half the grace period) later
  EXPECT_TRUE(outcome.ranks[1].stopped_by_hvdrun);
  EXPECT_EQ(DescribeWaitStatus(outcome.ranks[1].wait_status), "SIGTERM (signal 15)");
  EXPECT_EQ(DescribeWaitStatus(outcome.ranks[2].wait_status), "SIGTERM (signal 15)");
  EXPECT_GE(took, std::chrono::milliseconds(1000));
  EXPECT_LT(took, std::chrono::seconds(10));
}

// Creates `path` (empty).
void Touch(const std::string& path) { close(open(path.c_str(), O_WRONLY | O_CREAT, 0644)); }

// A rank that lost a peer names it (Runtime::ReportLostMember), and that peer may have failed
// on the loss of another: 0 failed on 1, 1 on 2, and 2 was SIGKILLed. Ranks 1 and 2 end only
// once hvdrun has taken rank 0's exit (asked who failed it), as a remote rank's news arrives
// late. The deepest of the chain is the first failure.
TEST_F(JobControllerTest, AChainOfLostPeersNamesTheLastAsTheFirstFailure) {
  const std::string asked = "/tmp/hvd_jc_asked_" + std::to_string(getpid());
  unlink(asked.c_str());
  shutdown_cause_ = [asked](int rank) -> std::optional<int> {
    if (rank == 0) Touch(asked);
    if (rank < 2) return rank + 1;
    return std::nullopt;
  };
  const std::string up = asked + "_up";
  const std::string wait = "while [ ! -e " + asked + " ]; do sleep 0.01; done; ";
  JobOutcome outcome = RunScripts({"while [ ! -e " + up + " ]; do sleep 0.01; done; exit 1",
                                   wait + "exit 1", "touch " + up + "; " + wait + "kill -9 $$"});
  unlink(asked.c_str());
  unlink(up.c_str());
  EXPECT_EQ(ExitCodeOf(outcome), 137);
  EXPECT_EQ(outcome.first_failed_rank, std::optional<int>(2));
  EXPECT_EQ(outcome.exited_before_cause, std::optional<int>(0));
  EXPECT_FALSE(outcome.ranks[1].stopped_by_hvdrun);
}

// Rank 0 names rank 1, and rank 1 names rank 2 only once it has failed (its report came after
// rank 0's exit was taken), so rank 2 had the SIGTERM; it had been SIGKILLed (here: it
// ignores the SIGTERM and is SIGKILLed once hvdrun asks about rank 1). A SIGKILL hvdrun did
// not send is rank 2's own end: it is the first failure.
TEST_F(JobControllerTest, APeerNamedLateWhoseEndWasASigkillIsTheFirstFailure) {
  const std::string told = "/tmp/hvd_jc_told_" + std::to_string(getpid());
  const std::string asked = "/tmp/hvd_jc_asked_" + std::to_string(getpid());
  unlink(told.c_str());
  unlink(asked.c_str());
  shutdown_cause_ = [told, asked](int rank) -> std::optional<int> {
    if (rank == 0) return 1;
    if (rank == 1 && access(told.c_str(), F_OK) == 0) {
      Touch(asked);
      return 2;
    }
    return std::nullopt;
  };
  JobOutcome outcome =
      RunScripts({"sleep 0.2; exit 1", "sleep 0.5; touch " + told + "; exit 1",
                  "trap '' TERM; while [ ! -e " + asked + " ]; do sleep 0.01; done; kill -9 $$"});
  unlink(told.c_str());
  unlink(asked.c_str());
  EXPECT_EQ(ExitCodeOf(outcome), 137);
  EXPECT_EQ(outcome.first_failed_rank, std::optional<int>(2));
  EXPECT_EQ(outcome.exited_before_cause, std::optional<int>(0));
}

// A rank stopped by hvdrun that ends by a crash signal (here: in its SIGTERM handler; a remote
// rank's crash whose Exit was on the way when the SIGTERM went out reads the same) crashed on
// its own: it is listed as failed, not as stopped (until 2026-12-01 it read as stopped). The
// first failure stays the first.
TEST_F(JobControllerTest, ARankThatCrashesWhileStoppedIsNotCountedAsStopped) {
  JobOutcome outcome =
      RunScripts({"sleep 0.3; exit 1", "trap 'kill -SEGV $$' TERM; sleep 30 & wait"});
  EXPECT_EQ(ExitCodeOf(outcome), 1);
  EXPECT_EQ(outcome.first_failed_rank, std::optional<int>(0));
  EXPECT_TRUE(WIFSIGNALED(outcome.ranks[1].wait_status) &&
              WTERMSIG(outcome.ranks[1].wait_status) == SIGSEGV)
      << outcome.ranks[1].wait_status;
  EXPECT_FALSE(outcome.ranks[1].stopped_by_hvdrun);
}

TEST_F(JobControllerTest, RankKilledBySignalGives128PlusN) {
  JobOutcome outcome = RunScripts({"kill -9 $$"});
  EXPECT_EQ(ExitCodeOf(outcome), 137);
}

TEST_F(JobControllerTest, RankIgnoringSigtermIsKilledAfterGrace) {
  // Rank 1 fails only once rank 0 ignores SIGTERM (the file appears after the trap).
  std::string ready = "/tmp/hvd_trap_ready_" + std::to_string(getpid());
  unlink(ready.c_str());
  auto start = std::chrono::steady_clock::now();
  JobOutcome outcome =
      RunScripts({"trap '' TERM; touch " + ready + "; sleep 30 & wait; sleep 30",
                  "i=0; while [ ! -e " + ready + " ] && [ $i -lt 1000 ]; do sleep 0.01; " +
                      "i=$((i+1)); done; exit 1"},
                 1.0);
  auto elapsed = std::chrono::steady_clock::now() - start;
  unlink(ready.c_str());
  EXPECT_GE(elapsed, std::chrono::milliseconds(900));
  EXPECT_LT(elapsed, std::chrono::seconds(10));
  EXPECT_EQ(ExitCodeOf(outcome), 1);
  EXPECT_EQ(DescribeWaitStatus(outcome.ranks[0].wait_status), "SIGKILL (signal 9)");
}

TEST_F(JobControllerTest, MissingProgramExits127AndNamesIt) {
  JobOutcome outcome = RunArgv({"hvd-no-such-program-xyz", "arg"});
  EXPECT_EQ(ExitCodeOf(outcome), 127);
  ASSERT_TRUE(outcome.ranks[0].exec_error.has_value());
  EXPECT_NE(outcome.ranks[0].exec_error->find("hvd-no-such-program-xyz"), std::string::npos);
  EXPECT_FALSE(outcome.ranks[0].stopped_by_hvdrun);
}

TEST_F(JobControllerTest, NonExecutableFileExits126) {
  std::string path = "/tmp/hvd_not_executable_" + std::to_string(getpid());
  close(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644));
  JobOutcome outcome = RunArgv({path});
  unlink(path.c_str());
  EXPECT_EQ(ExitCodeOf(outcome), 126);
  ASSERT_TRUE(outcome.ranks[0].exec_error.has_value());
  EXPECT_NE(outcome.ranks[0].exec_error->find(path + "': Permission denied"), std::string::npos)
      << *outcome.ranks[0].exec_error;
}

TEST_F(JobControllerTest, PartialLastLineIsFlushedWhenRankExits) {
  JobOutcome outcome = RunScripts({"printf 'no newline'"});
  EXPECT_EQ(ExitCodeOf(outcome), kExitOk);
  EXPECT_EQ(out_.Contents(), "[0]<stdout>:no newline\n");
}

TEST_F(JobControllerTest, LeftoverProcessInRankGroupIsKilledAtTheEnd) {
  // The rank starts a background sleep that holds its stdout open, then exits 0.
  auto start = std::chrono::steady_clock::now();
  JobOutcome outcome = RunScripts({"sleep 30 & echo started"});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(ExitCodeOf(outcome), kExitOk);
  EXPECT_NE(out_.Contents().find("[0]<stdout>:started"), std::string::npos);
}

// Starts ranks like LocalSpawner, but slowly.
class SlowSpawner : public RankSpawner {
 public:
  Result<SpawnedRank> Spawn(const SpawnRequest& request) override {
    usleep(100 * 1000);
    return local_.Spawn(request);
  }

 private:
  LocalSpawner local_;
};

// Rank 2 is SIGKILLed and rank 0 then exits 1 (its collectives failed on the lost peer), both
// before job control looks: rank 2 is the first failure, not the lower rank.
TEST_F(JobControllerTest, ASignalDeathSeenWithItsPeersExitsIsTheFirstFailure) {
  const std::string dead = "/tmp/hvd_jc_dead_" + std::to_string(getpid());
  unlink(dead.c_str());
  const std::string wait = "while [ ! -e " + dead + " ]; do sleep 0.01; done; ";
  AllEndedSpawner spawner(3);
  spawner_ = &spawner;
  JobOutcome outcome =
      RunScripts({wait + "exit 1", wait + "exit 0", "touch " + dead + "; kill -9 $$"});
  unlink(dead.c_str());
  EXPECT_EQ(ExitCodeOf(outcome), 137);
  EXPECT_EQ(outcome.first_failed_rank, std::optional<int>(2));
  EXPECT_EQ(DescribeWaitStatus(outcome.ranks[0].wait_status), "exit code 1");
  EXPECT_FALSE(outcome.ranks[0].stopped_by_hvdrun);
  EXPECT_TRUE(outcome.ranks[1].finished);
}

// Rank 2's process is SIGKILLed; rank 0 fails on it and is reaped before rank 2's guardian
// says so. Rank 2 is still the first failure: hvdrun waits for the guardian.
TEST_F(JobControllerTest, APeerFailingBeforeTheGuardianOfTheKilledRankReportsWaitsForIt) {
  const std::string go = "/tmp/hvd_jc_go_" + std::to_string(getpid());
  unlink(go.c_str());
  LateGuardianSpawner spawner(3);
  spawner_ = &spawner;
  JobOutcome outcome = RunScripts(
      {"while [ ! -e " + go + " ]; do sleep 0.01; done; exit 1", "sleep 30",
       "touch " + go + "; while kill -0 $WAIT_PID 2>/dev/null; do sleep 0.01; done; kill -9 $$"});
  unlink(go.c_str());
  EXPECT_EQ(ExitCodeOf(outcome), 137);
  EXPECT_EQ(outcome.first_failed_rank, std::optional<int>(2));
  EXPECT_EQ(DescribeWaitStatus(outcome.ranks[0].wait_status), "exit code 1");
  EXPECT_FALSE(outcome.ranks[0].stopped_by_hvdrun);
  EXPECT_TRUE(outcome.ranks[1].stopped_by_hvdrun);
}

TEST_F(JobControllerTest, StartTimeoutStopsTheJobWithTimeoutCode) {
  std::vector<SpawnRequest> requests(3);
  for (int i = 0; i < 3; ++i) {
    requests[i].rank = i;
    requests[i].host = "localhost";
    requests[i].argv = {"/bin/sleep", "30"};
  }
  SlowSpawner spawner;
  auto start = std::chrono::steady_clock::now();
  JobOutcome outcome = RunRequests(requests, spawner, {0.05, 5, false});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_TRUE(outcome.start_timed_out);
  EXPECT_EQ(ExitCodeOf(outcome), kExitTimeout);
  EXPECT_TRUE(outcome.ranks[0].started);
  EXPECT_FALSE(outcome.ranks[2].started);
  EXPECT_TRUE(outcome.ranks[0].finished);
}

// Starts the ranks marked remote in Prepare (as hvd-agent does when Prepare sends their Start
// frames), the others in Spawn, like LocalSpawner.
class PreparedRemoteSpawner : public RankSpawner {
 public:
  void Prepare(const std::vector<SpawnRequest>& requests,
               std::chrono::steady_clock::time_point) override {
    for (const SpawnRequest& request : requests) {
      if (request.remote) prepared_.emplace(request.rank, local_.Spawn(request));
    }
  }
  Result<SpawnedRank> Spawn(const SpawnRequest& request) override {
    if (!request.remote) return local_.Spawn(request);
    auto it = prepared_.find(request.rank);
    if (it == prepared_.end()) return Status::Internal("not prepared");
    Result<SpawnedRank> spawned = std::move(it->second);
    prepared_.erase(it);
    return spawned;
  }

 private:
  LocalSpawner local_;
  std::map<int, Result<SpawnedRank>> prepared_;
};

// Rank 0 (local) cannot start; ranks 1 and 2 (remote) were started before it: they are stopped
// and awaited with the job (until 2026-12-01 they ran on unwatched, their output dropped, until
// the agent sessions closed).
TEST_F(JobControllerTest, RemoteRanksStartedBeforeALocalSpawnFailedAreStoppedWithTheJob) {
  std::vector<SpawnRequest> requests(3);
  for (int i = 0; i < 3; ++i) {
    requests[i].rank = i;
    requests[i].host = i == 0 ? "localhost" : "remote";
    requests[i].remote = i > 0;
    requests[i].argv = {"/bin/sh", "-c", "echo started $R; exec sleep 30"};
    requests[i].env = {{"PATH", "/usr/bin:/bin"}, {"R", std::to_string(i)}};
  }
  requests[0].argv = {"/nonexistent/hvd-no-such-program"};
  PreparedRemoteSpawner spawner;
  const auto start = std::chrono::steady_clock::now();
  JobOutcome outcome = RunRequests(requests, spawner, {30, 5, false});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  EXPECT_EQ(ExitCodeOf(outcome), 127);
  for (int r : {1, 2}) {
    EXPECT_TRUE(outcome.ranks[r].started) << r;
    EXPECT_TRUE(outcome.ranks[r].finished) << r;
    EXPECT_TRUE(outcome.ranks[r].stopped_by_hvdrun) << r;
  }
}

}  // namespace
}  // namespace hvd::launcher
