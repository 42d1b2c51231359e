// SshSession, ConnectSshAgent and AgentSession (one hvd-agent per host, every rank of the host
// over its one SSH connection) against the namespaced sshds of scripts/cluster/up.sh.
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <random>
#include <thread>

#include "launcher/agents/agent_fleet.h"
#include "launcher/agents/agent_session.h"
#include "launcher/agents/ssh_agent_link.h"
#include "launcher/ssh/ssh_session.h"
#include "test/cluster/cluster_env.h"

namespace hvd::test {
namespace {

using launcher::AgentSession;
using launcher::SpawnedRank;
using launcher::SshSession;
using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

std::string Marker(const char* what) {
  std::random_device rd;
  return std::string("hvd-") + what + "-" + std::to_string(rd()) + std::to_string(rd());
}

bool Contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string Cmdline(int pid) { return ReadFile("/proc/" + std::to_string(pid) + "/cmdline"); }

// Processes in host `ns` whose command line contains `needle`.
int CountInHost(const std::string& ns, const std::string& needle) {
  int n = 0;
  for (int pid : NetnsPids(ns)) n += Contains(Cmdline(pid), needle) ? 1 : 0;
  return n;
}

bool WaitUntil(const std::function<bool()>& done, seconds limit) {
  auto deadline = Clock::now() + limit;
  while (!done()) {
    if (Clock::now() >= deadline) return false;
    usleep(50000);
  }
  return true;
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

  AgentSession::Options Options(double heartbeat_timeout_s = 0) const {
    AgentSession::Options o;
    o.hello.cwd = "/tmp";
    o.hello.grace_period_s = 1;
    o.hello.heartbeat_timeout_s = heartbeat_timeout_s;
    o.hello.heartbeat_interval_s = heartbeat_timeout_s / 5;
    return o;
  }
  Result<std::unique_ptr<AgentSession>> TryOpen(const std::string& host,
                                                AgentSession::Options options,
                                                const std::string& agent_path) {
    auto deadline = Clock::now() + seconds(20);
    auto link = launcher::ConnectSshAgent(cluster_.Target(host), agent_path, deadline);
    if (!link.ok()) return link.status();
    options.host = host;
    return AgentSession::Open(std::move(*link), options, deadline);
  }
  std::unique_ptr<AgentSession> Open(const std::string& host, double heartbeat_timeout_s = 0) {
    auto session = TryOpen(host, Options(heartbeat_timeout_s), cluster_.agent_path);
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    return session.ok() ? std::move(*session) : nullptr;
  }
  SpawnedRank Start(AgentSession& session, uint32_t id, std::vector<std::string> argv,
                    std::map<std::string, std::string> env = {}) {
    auto rank = session.StartRank(id, argv, env);
    EXPECT_TRUE(rank.ok()) << rank.status().ToString();
    return rank.ok() ? std::move(*rank) : SpawnedRank();
  }
  std::string WriteFile(const std::string& name, const std::string& text) {
    std::string path = scratch_ + "/" + name;
    std::ofstream(path) << text;
    return path;
  }

  // The cluster's known_hosts line for hvd-h2 ("hvd-h2,<address> <type> <key>"), or "".
  std::string H2KnownHostsLine() const {
    std::ifstream in(cluster_.known_hosts);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("hvd-h2,", 0) == 0) return line;
    }
    return "";
  }

  ClusterEnv cluster_;
  std::string scratch_;
};

TEST_F(SshClusterTest, EveryRankOfAHostGoesOverOneConnectionToOneAgent) {
  // Given one session to hvd-h1 running four ranks
  auto session = Open("hvd-h1");
  ASSERT_TRUE(session);
  const std::string marker = Marker("one");
  std::vector<SpawnedRank> ranks;
  for (uint32_t r = 0; r < 4; ++r) {
    ranks.push_back(Start(*session, r,
                          {"sh", "-c", "echo rank $0 $(hostname -I); echo err$0 >&2; sleep 1",
                           std::to_string(r), marker}));
  }
  // Then hvd-h1 runs exactly one agent for them
  EXPECT_TRUE(WaitUntil([&] { return CountInHost("hvd-h1", marker) == 4; }, seconds(10)));
  EXPECT_EQ(CountInHost("hvd-h1", "hvd-agent"), 1);
  // And each rank's output and status are its own, from hvd-h1
  for (uint32_t r = 0; r < 4; ++r) {
    RankResult result = CollectRank(ranks[r], seconds(20));
    EXPECT_EQ(result.wait_status, 0) << result.err;
    EXPECT_EQ(result.out, "rank " + std::to_string(r) + " " + cluster_.addrs[0] + "\n");
    EXPECT_EQ(result.err, "err" + std::to_string(r) + "\n");
  }
}

TEST_F(SshClusterTest, ExitCodeAndSignalPropagate) {
  auto session = Open("hvd-h2");
  ASSERT_TRUE(session);
  SpawnedRank exited = Start(*session, 0, {"sh", "-c", "exit 3"});
  SpawnedRank killed = Start(*session, 1, {"sh", "-c", "kill -SEGV $$"});
  EXPECT_EQ(CollectRank(exited, seconds(20)).wait_status, W_EXITCODE(3, 0));
  int status = CollectRank(killed, seconds(20)).wait_status;
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGSEGV);
}

TEST_F(SshClusterTest, EnvironmentAndKeyArriveButNeverOnACommandLine) {
  // Given a secret-looking variable and a job key
  const std::string value = Marker("env");
  AgentSession::Options options = Options();
  control::JobKey key{};
  key.fill(0x5a);
  options.hello.job_key = key;
  auto session = TryOpen("hvd-h1", options, cluster_.agent_path);
  ASSERT_TRUE(session.ok()) << session.status().ToString();
  // When a rank runs on hvd-h1
  SpawnedRank rank =
      Start(**session, 0, {"sh", "-c", "echo $HVD_TEST_SECRET; echo $HVD_SECRET_FD; exec sleep 30"},
            {{"HVD_TEST_SECRET", value}});
  EXPECT_EQ(ReadLine(rank.stdout_fd, seconds(20)), value);
  EXPECT_FALSE(ReadLine(rank.stdout_fd, seconds(5)).empty()) << "HVD_SECRET_FD unset";
  // Then no process's command line on any host carries the value (ps shows nothing)
  EXPECT_TRUE(PidsWithCmdline(value).empty());
  EXPECT_TRUE(PidsWithCmdline(std::string(8, '\x5a')).empty());
  (*session)->Close();
  EXPECT_TRUE(WIFSIGNALED(CollectRank(rank, seconds(10)).wait_status));
}

TEST_F(SshClusterTest, SignalReachesTheRemoteRank) {
  auto session = Open("hvd-h1");
  ASSERT_TRUE(session);
  SpawnedRank rank = Start(*session, 0,
                           {"sh", "-c",
                            "trap 'echo got USR1; exit 7' USR1; echo ready; "
                            "while :; do sleep 0.1; done"});
  ASSERT_EQ(ReadLine(rank.stdout_fd, seconds(20)), "ready");
  rank.handle->Signal(SIGUSR1);
  RankResult r = CollectRank(rank, seconds(20));
  EXPECT_TRUE(Contains(r.out, "got USR1")) << r.out;
  EXPECT_EQ(r.wait_status, W_EXITCODE(7, 0));
}

TEST_F(SshClusterTest, CloseKillsEveryRemoteProcessGroup) {
  // Given two ranks with background grandchildren, tagged with a marker argument
  const std::string marker = Marker("group");
  auto session = Open("hvd-h1");
  ASSERT_TRUE(session);
  SpawnedRank a = Start(*session, 0, {"sh", "-c", "sleep 1000 & echo $!; wait", marker});
  SpawnedRank b = Start(*session, 1, {"sh", "-c", "sleep 1000 & echo $!; wait", marker});
  ASSERT_FALSE(ReadLine(a.stdout_fd, seconds(20)).empty());
  ASSERT_FALSE(ReadLine(b.stdout_fd, seconds(20)).empty());
  ASSERT_FALSE(PidsWithCmdline(marker).empty());
  // When the launcher closes the session
  auto start = Clock::now();
  session->Close();
  RankResult ra = CollectRank(a, seconds(20)), rb = CollectRank(b, seconds(20));
  // Then the agent reports SIGTERM for both and nothing of them is left in hvd-h1
  EXPECT_LT(Clock::now() - start, seconds(10));
  EXPECT_TRUE(WIFSIGNALED(ra.wait_status) && WTERMSIG(ra.wait_status) == SIGTERM);
  EXPECT_TRUE(WIFSIGNALED(rb.wait_status) && WTERMSIG(rb.wait_status) == SIGTERM);
  EXPECT_TRUE(PidsWithCmdline(marker).empty());
  session.reset();
  EXPECT_TRUE(WaitUntil([&] { return CountInHost("hvd-h1", "hvd-agent") == 0; }, seconds(10)));
}

TEST_F(SshClusterTest, DroppingTheSessionAlsoCleansUp) {
  const std::string marker = Marker("drop");
  {
    auto session = Open("hvd-h2");
    ASSERT_TRUE(session);
    SpawnedRank rank = Start(*session, 0, {"sh", "-c", "echo up; exec sleep 1000", marker});
    ASSERT_EQ(ReadLine(rank.stdout_fd, seconds(20)), "up");
    ::close(rank.stdout_fd);
    ::close(rank.stderr_fd);
  }
  EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdline(marker).empty(); }, seconds(10)));
}

TEST_F(SshClusterTest, LostConnectionIsReportedAndTheRemoteRanksDie) {
  // Given running ranks on hvd-h2
  const std::string marker = Marker("lost");
  auto session = Open("hvd-h2");
  ASSERT_TRUE(session);
  SpawnedRank rank = Start(*session, 0, {"sh", "-c", "echo up; exec sleep 1000", marker});
  ASSERT_EQ(ReadLine(rank.stdout_fd, seconds(20)), "up");
  // When its SSH connection dies (sshd's per-connection processes are killed)
  for (int pid : NetnsPids("hvd-h2")) {
    if (Contains(Cmdline(pid), "sshd: root")) ::kill(pid, SIGKILL);
  }
  // Then the launcher side reports a lost connection (exit 255, like ssh) naming the host,
  // and the agent, seeing the end of its stdin, takes the rank down
  RankResult r = CollectRank(rank, seconds(20));
  EXPECT_EQ(r.wait_status, W_EXITCODE(255, 0));
  EXPECT_TRUE(Contains(r.transport_error, "hvd-h2")) << r.transport_error;
  EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdline(marker).empty(); }, seconds(10)));
}

// Sets a host's veth down (the host vanishes without closing its sockets) and always back up.
class CutOff {
 public:
  explicit CutOff(int k) : link_("hvd-v" + std::to_string(k)) {
    EXPECT_EQ(std::system(("ip link set " + link_ + " down").c_str()), 0);
  }
  ~CutOff() { (void)std::system(("ip link set " + link_ + " up").c_str()); }

 private:
  std::string link_;
};

TEST_F(SshClusterTest, HostCutOffIsLostWithinTheHeartbeatTimeoutOnBothSides) {
  // Given a rank on hvd-h2 under a 2 s heartbeat timeout
  const std::string marker = Marker("cut");
  auto session = Open("hvd-h2", /*heartbeat_timeout_s=*/2);
  ASSERT_TRUE(session);
  SpawnedRank rank = Start(*session, 0, {"sh", "-c", "echo up; exec sleep 1000", marker});
  ASSERT_EQ(ReadLine(rank.stdout_fd, seconds(20)), "up");
  RankResult r;
  std::chrono::milliseconds took;
  {
    // When hvd-h2's link goes down
    CutOff cut(2);
    auto begin = Clock::now();
    r = CollectRank(rank, seconds(20));
    took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - begin);
    // Then the launcher declares it lost within the timeout (plus one heartbeat of slack)
    EXPECT_EQ(r.wait_status, W_EXITCODE(255, 0));
    EXPECT_TRUE(Contains(r.transport_error, "host hvd-h2 lost: no sign of life"))
        << r.transport_error;
    EXPECT_LT(took, std::chrono::milliseconds(2600));
    // And the cut-off agent, hearing nothing either, stops its rank on its own
    EXPECT_TRUE(WaitUntil([&] { return PidsWithCmdline(marker).empty(); }, seconds(10)));
  }
  std::cout << "lost after " << took.count() << " ms\n";
}

TEST_F(SshClusterTest, ChangedHostKeyIsAnErrorNamingTheHost) {
  // Given known_hosts that records hvd-h2's key under the name hvd-h1
  const std::string h2_line = H2KnownHostsLine();
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

TEST_F(SshClusterTest, RevokedHostKeyIsRefusedUnderEveryPolicy) {
  // Given known_hosts that marks hvd-h2's key @revoked (under another name), and also records
  // it for hvd-h2 itself
  const std::string h2_line = H2KnownHostsLine();
  ASSERT_FALSE(h2_line.empty());
  const std::string key = h2_line.substr(h2_line.find(' '));
  launcher::SshTarget target = cluster_.Target("hvd-h2");
  for (const std::string& others : {std::string(), "hvd-h2" + key + "\n"}) {
    target.options.known_hosts_file =
        WriteFile("known_hosts_revoked", others + "@revoked old-name" + key + "\n");
    for (auto policy : {launcher::HostKeyPolicy::kStrict, launcher::HostKeyPolicy::kAcceptNew}) {
      // When connecting
      target.options.host_key_policy = policy;
      auto session = SshSession::Connect(target, Clock::now() + seconds(10));
      // Then the connection is refused, naming the host and the revocation, and with
      // accept-new nothing is recorded
      ASSERT_FALSE(session.ok());
      EXPECT_EQ(session.status().code(), StatusCode::kPermissionDenied);
      EXPECT_TRUE(Contains(session.status().message(), "hvd-h2:22")) << session.status().message();
      EXPECT_TRUE(Contains(session.status().message(), "@revoked")) << session.status().message();
      EXPECT_EQ(ReadFile(target.options.known_hosts_file),
                others + "@revoked old-name" + key + "\n");
    }
  }
}

TEST_F(SshClusterTest, UnknownHostIsRefusedUnlessAcceptNewIsAsked) {
  launcher::SshTarget target = cluster_.Target("hvd-h2");
  target.options.known_hosts_file = scratch_ + "/fresh/known_hosts";
  auto strict = SshSession::Connect(target, Clock::now() + seconds(10));
  ASSERT_FALSE(strict.ok());
  EXPECT_TRUE(Contains(strict.status().message(), "hvd-h2:22 is not in"))
      << strict.status().message();
  // naming the missing file, and the flags that fix it
  EXPECT_TRUE(Contains(strict.status().message(), "known_hosts (which does not exist)"))
      << strict.status().message();
  EXPECT_TRUE(Contains(strict.status().message(), "--ssh-accept-new-host-keys"))
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

TEST_F(SshClusterTest, MissingAgentBinaryIsAnAgentErrorWithTheShellsMessage) {
  auto session = TryOpen("hvd-h1", Options(), "/no/such/hvd-agent");
  ASSERT_FALSE(session.ok());
  EXPECT_TRUE(Contains(session.status().message(), "/no/such/hvd-agent"))
      << session.status().message();
  EXPECT_TRUE(Contains(session.status().message(), "exit code 127")) << session.status().message();
}

TEST_F(SshClusterTest, FleetOpensBothHostsAndFailsWholeOnAnUnreachableOne) {
  launcher::AgentLinkFactory connect = [&](const std::string& host, Clock::time_point deadline) {
    launcher::SshTarget target = cluster_.Target(host);
    target.options.connect_timeout_s = 2;
    return launcher::ConnectSshAgent(target, cluster_.agent_path, deadline);
  };
  auto good = launcher::AgentFleet::Open({"hvd-h1", "hvd-h2"}, connect, Options(),
                                         Clock::now() + seconds(20));
  ASSERT_TRUE(good.ok()) << good.status().ToString();
  EXPECT_NE((*good)->session("hvd-h2"), nullptr);
  good->reset();
  auto bad = launcher::AgentFleet::Open({"hvd-h1", "10.77.0.99", "hvd-h2"}, connect, Options(),
                                        Clock::now() + seconds(20));
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(
      Contains(bad.status().message(), "\n  10.77.0.99: timeout: ssh to root@10.77.0.99:22"))
      << bad.status().message();
  EXPECT_FALSE(Contains(bad.status().message(), "hvd-h1:"));
  EXPECT_TRUE(WaitUntil([&] { return CountInHost("hvd-h1", "hvd-agent") == 0; }, seconds(10)));
}

}  // namespace
}  // namespace hvd::test
