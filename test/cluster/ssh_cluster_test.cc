// SshSession and StartRemoteRank against the namespaced sshds of scripts/cluster/up.sh.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "launcher/remote_process.h"
#include "launcher/ssh_session.h"
#include "test/cluster/cluster_env.h"

namespace hvd::test {
namespace {

using launcher::RemoteRankRequest;
using launcher::SshSession;
using launcher::StartRemoteRank;
using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

std::string Marker(const char* what) {
  std::random_device rd;
  return std::string("hvd-") + what + "-" + std::to_string(rd()) + std::to_string(rd());
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

class SshClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::optional<ClusterEnv> env = ClusterEnv::Load();
    if (!env) GTEST_SKIP() << "no test cluster (run scripts/cluster/up.sh 2 as root)";
    cluster_ = *env;
    scratch_ = ::testing::TempDir() + "/" + Marker("ssh");
    std::filesystem::create_directories(scratch_);
  }
  void TearDown() override {
    if (!scratch_.empty()) std::filesystem::remove_all(scratch_);
  }

  RemoteRankRequest Request(std::vector<std::string> argv) const {
    RemoteRankRequest r;
    r.argv = std::move(argv);
    r.agent_path = cluster_.agent_path;
    r.cwd = "/tmp";
    r.grace_period_s = 1;
    return r;
  }
  std::unique_ptr<launcher::RemoteProcess> Start(const std::string& host,
                                                 const RemoteRankRequest& request) {
    auto process = StartRemoteRank(cluster_.Target(host), request, Clock::now() + seconds(20));
    EXPECT_TRUE(process.ok()) << process.status().ToString();
    return process.ok() ? std::move(*process) : nullptr;
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = scratch_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  ClusterEnv cluster_;
  std::string scratch_;
};

TEST_F(SshClusterTest, EchoRunsOnTheRemoteHost) {
  auto process = Start("hvd-h1", Request({"sh", "-c", "echo hello; hostname -I; echo oops >&2"}));
  ASSERT_TRUE(process);
  RankResult r = CollectRank(*process, seconds(20));
  EXPECT_EQ(r.wait_status, 0) << r.err;
  EXPECT_TRUE(Contains(r.out, "hello\n")) << r.out;
  EXPECT_TRUE(Contains(r.out, cluster_.addrs[0])) << "ran outside hvd-h1: " << r.out;
  EXPECT_EQ(r.err, "oops\n");
  EXPECT_TRUE(process->transport_status().ok());
  pollfd exited{process->exit_event_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&exited, 1, 0), 1) << "exit_event_fd not readable after the exit";
  EXPECT_EQ(process->TryWait(), std::optional<int>(0));
}

TEST_F(SshClusterTest, ExitCodeAndSignalPropagate) {
  auto exited = Start("hvd-h2", Request({"sh", "-c", "exit 3"}));
  auto killed = Start("hvd-h2", Request({"sh", "-c", "kill -SEGV $$"}));
  ASSERT_TRUE(exited && killed);
  int status = CollectRank(*exited, seconds(20)).wait_status;
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 3);
  status = CollectRank(*killed, seconds(20)).wait_status;
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
}

TEST_F(SshClusterTest, EnvironmentAndKeyArriveButNeverOnACommandLine) {
  // Given a secret-looking variable and a job key
  const std::string value = Marker("env");
  RemoteRankRequest request =
      Request({"sh", "-c", "echo $HVD_TEST_SECRET; echo $HVD_SECRET_FD; exec sleep 30"});
  request.env["HVD_TEST_SECRET"] = value;
  control::JobKey key{};
  key.fill(0x5a);
  request.job_key = key;
  // When the rank runs on hvd-h1
  auto process = Start("hvd-h1", request);
  ASSERT_TRUE(process);
  EXPECT_EQ(ReadLine(process->stdout_fd(), seconds(20)), value);
  EXPECT_FALSE(ReadLine(process->stdout_fd(), seconds(5)).empty()) << "HVD_SECRET_FD unset";
  // Then no process's command line on any host carries the value (ps shows nothing)
  EXPECT_TRUE(PidsWithCmdline(value).empty());
  EXPECT_TRUE(PidsWithCmdline(std::string(8, '\x5a')).empty());
  process->Close();
  EXPECT_TRUE(process->Wait(Clock::now() + seconds(10)).ok());
}

TEST_F(SshClusterTest, SignalReachesTheRemoteRank) {
  auto process = Start("hvd-h1", Request({"sh", "-c",
                                          "trap 'echo got USR1; exit 7' USR1; echo ready; "
                                          "while :; do sleep 0.1; done"}));
  ASSERT_TRUE(process);
  ASSERT_EQ(ReadLine(process->stdout_fd(), seconds(20)), "ready");
  ASSERT_TRUE(process->Signal(SIGUSR1).ok());
  RankResult r = CollectRank(*process, seconds(20));
  EXPECT_TRUE(Contains(r.out, "got USR1")) << r.out;
  ASSERT_TRUE(WIFEXITED(r.wait_status)) << r.wait_status;
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 7);
  EXPECT_FALSE(process->Signal(SIGUSR1).ok()) << "signalling a finished rank";
}

TEST_F(SshClusterTest, CloseKillsTheRemoteProcessGroup) {
  // Given a rank with a background grandchild, both tagged with a marker argument
  const std::string marker = Marker("group");
  auto process = Start("hvd-h1", Request({"sh", "-c", "sleep 1000 & echo $!; wait", marker}));
  ASSERT_TRUE(process);
  ASSERT_FALSE(ReadLine(process->stdout_fd(), seconds(20)).empty());
  ASSERT_FALSE(PidsWithCmdline(marker).empty());
  // When the launcher closes the rank
  auto start = Clock::now();
  process->Close();
  RankResult r = CollectRank(*process, seconds(20));
  // Then the agent reports SIGTERM and nothing of the rank is left in hvd-h1
  EXPECT_LT(Clock::now() - start, seconds(10));
  EXPECT_TRUE(WIFSIGNALED(r.wait_status) && WTERMSIG(r.wait_status) == SIGTERM) << r.wait_status;
  EXPECT_TRUE(PidsWithCmdline(marker).empty());
  for (int pid : NetnsPids("hvd-h1")) {
    EXPECT_FALSE(Contains(ReadFile("/proc/" + std::to_string(pid) + "/cmdline"), "sleep"))
        << "pid " << pid << " survived in hvd-h1";
  }
}

TEST_F(SshClusterTest, DroppingTheHandleAlsoCleansUp) {
  const std::string marker = Marker("drop");
  {
    auto process = Start("hvd-h2", Request({"sh", "-c", "echo up; exec sleep 1000", marker}));
    ASSERT_TRUE(process);
    ASSERT_EQ(ReadLine(process->stdout_fd(), seconds(20)), "up");
  }
  auto deadline = Clock::now() + seconds(10);
  while (!PidsWithCmdline(marker).empty() && Clock::now() < deadline) usleep(50000);
  EXPECT_TRUE(PidsWithCmdline(marker).empty());
}

TEST_F(SshClusterTest, LostConnectionIsReportedAndTheRemoteRankDies) {
  // Given a running rank on hvd-h2
  const std::string marker = Marker("lost");
  auto process = Start("hvd-h2", Request({"sh", "-c", "echo up; exec sleep 1000", marker}));
  ASSERT_TRUE(process);
  ASSERT_EQ(ReadLine(process->stdout_fd(), seconds(20)), "up");
  // When its SSH connection dies (sshd's per-connection processes are killed)
  for (int pid : NetnsPids("hvd-h2")) {
    if (Contains(ReadFile("/proc/" + std::to_string(pid) + "/cmdline"), "sshd: root")) {
      ::kill(pid, SIGKILL);
    }
  }
  // Then the launcher side reports a lost connection (exit 255, like ssh) naming the host,
  // and the agent, seeing the end of its stdin, takes the rank down
  RankResult r = CollectRank(*process, seconds(20));
  ASSERT_TRUE(WIFEXITED(r.wait_status)) << r.wait_status;
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 255);
  EXPECT_EQ(process->transport_status().code(), StatusCode::kIoError);
  EXPECT_TRUE(Contains(process->transport_status().message(), "hvd-h2"))
      << process->transport_status().message();
  auto deadline = Clock::now() + seconds(10);
  while (!PidsWithCmdline(marker).empty() && Clock::now() < deadline) usleep(50000);
  EXPECT_TRUE(PidsWithCmdline(marker).empty());
}

TEST_F(SshClusterTest, ParallelStartsOnBothHosts) {
  std::vector<std::thread> threads;
  std::vector<RankResult> results(4);
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      auto process = Start(cluster_.hosts[i % 2], Request({"echo", "rank" + std::to_string(i)}));
      if (process) results[i] = CollectRank(*process, seconds(30));
    });
  }
  for (auto& t : threads) t.join();
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(results[i].out, "rank" + std::to_string(i) + "\n");
    EXPECT_EQ(results[i].wait_status, 0);
  }
}

TEST_F(SshClusterTest, ChangedHostKeyIsAnErrorNamingTheHost) {
  // Given known_hosts that records hvd-h2's key under the name hvd-h1
  std::string h2_line;
  std::ifstream in(cluster_.known_hosts);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("hvd-h2,", 0) == 0) h2_line = line;
  }
  ASSERT_FALSE(h2_line.empty());
  launcher::SshTarget target = cluster_.Target("hvd-h1");
  target.options.known_hosts_file =
      WriteFile("known_hosts", "hvd-h1" + h2_line.substr(h2_line.find(' ')) + "\n");
  // When connecting, even with accept-new
  target.options.host_key_policy = launcher::HostKeyPolicy::kAcceptNew;
  auto session = SshSession::Connect(target, Clock::now() + seconds(10));
  // Then the connection is refused with a message that names the host
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(Contains(session.status().message(), "hvd-h1")) << session.status().message();
  EXPECT_TRUE(Contains(session.status().message(), "CHANGED")) << session.status().message();
}

TEST_F(SshClusterTest, UnknownHostIsRefusedUnlessAcceptNewIsAsked) {
  launcher::SshTarget target = cluster_.Target("hvd-h2");
  target.options.known_hosts_file = scratch_ + "/fresh/known_hosts";
  auto strict = SshSession::Connect(target, Clock::now() + seconds(10));
  ASSERT_FALSE(strict.ok());
  EXPECT_TRUE(Contains(strict.status().message(), "hvd-h2:22 is not in"))
      << strict.status().message();

  target.options.host_key_policy = launcher::HostKeyPolicy::kAcceptNew;
  auto first = SshSession::Connect(target, Clock::now() + seconds(10));
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  EXPECT_TRUE(Contains(ReadFile(target.options.known_hosts_file), "hvd-h2 ssh-ed25519 "));
  target.options.host_key_policy = launcher::HostKeyPolicy::kStrict;
  auto again = SshSession::Connect(target, Clock::now() + seconds(10));
  EXPECT_TRUE(again.ok()) << again.status().ToString();
}

TEST_F(SshClusterTest, UnreachableHostTimesOutNamingIt) {
  // 10.77.0.99 is on the bridge's subnet but no namespace has it.
  launcher::SshTarget target = cluster_.Target("10.77.0.99");
  target.options.connect_timeout_s = 2;
  auto start = Clock::now();
  auto session = SshSession::Connect(target, Clock::now() + seconds(30));
  ASSERT_FALSE(session.ok());
  EXPECT_LT(Clock::now() - start, seconds(4));
  EXPECT_TRUE(Contains(session.status().message(), "10.77.0.99:22")) << session.status().message();
}

TEST_F(SshClusterTest, RetriesStayWithinTheDeadline) {
  launcher::SshTarget target = cluster_.Target("hvd-h1");
  target.options.port = 2222;
  target.options.connect_attempts = 100;
  target.options.retry_backoff_s = 0.2;
  auto start = Clock::now();
  auto session = SshSession::Connect(target, Clock::now() + seconds(2));
  ASSERT_FALSE(session.ok());
  EXPECT_LT(Clock::now() - start, seconds(3));
  EXPECT_TRUE(Contains(session.status().message(), "attempts")) << session.status().message();
}

TEST_F(SshClusterTest, RefusedPortNamesHostAndPort) {
  launcher::SshTarget target = cluster_.Target("hvd-h1");
  target.options.port = 2222;
  auto session = SshSession::Connect(target, Clock::now() + seconds(10));
  ASSERT_FALSE(session.ok());
  EXPECT_EQ(session.status().code(), StatusCode::kIoError);
  EXPECT_TRUE(Contains(session.status().message(), "hvd-h1:2222")) << session.status().message();
  EXPECT_TRUE(Contains(session.status().message(), "refused")) << session.status().message();
}

TEST_F(SshClusterTest, BadIdentityFilesGetClearErrors) {
  launcher::SshTarget target = cluster_.Target("hvd-h1");
  target.options.identity_file = scratch_ + "/missing_key";
  auto missing = SshSession::Connect(target, Clock::now() + seconds(10));
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), StatusCode::kInvalidArgument);
  EXPECT_TRUE(Contains(missing.status().message(), "missing_key")) << missing.status().message();

  target.options.identity_file = WriteFile("garbage_key", "this is not a key\n");
  auto garbage = SshSession::Connect(target, Clock::now() + seconds(10));
  ASSERT_FALSE(garbage.ok());
  EXPECT_TRUE(Contains(garbage.status().message(), "garbage_key")) << garbage.status().message();

  std::string other = scratch_ + "/other_key";
  ASSERT_EQ(std::system(("ssh-keygen -q -t ed25519 -N '' -f " + other).c_str()), 0);
  target.options.identity_file = other;
  auto rejected = SshSession::Connect(target, Clock::now() + seconds(10));
  ASSERT_FALSE(rejected.ok());
  EXPECT_EQ(rejected.status().code(), StatusCode::kPermissionDenied);
  EXPECT_TRUE(Contains(rejected.status().message(), "root@hvd-h1:22"))
      << rejected.status().message();
}

TEST_F(SshClusterTest, MissingAgentBinaryExits127) {
  RemoteRankRequest request = Request({"true"});
  request.agent_path = "/no/such/hvd-agent";
  auto process = Start("hvd-h1", request);
  ASSERT_TRUE(process);
  RankResult r = CollectRank(*process, seconds(20));
  ASSERT_TRUE(WIFEXITED(r.wait_status)) << r.wait_status;
  EXPECT_EQ(WEXITSTATUS(r.wait_status), 127);
  EXPECT_TRUE(Contains(r.err, "/no/such/hvd-agent")) << r.err;
}

}  // namespace
}  // namespace hvd::test
