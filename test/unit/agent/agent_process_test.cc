// Drives the real hvd-agent binary over pipes with raw frames, as sshd would, without SSH:
// what the agent does on its own (bad input, a silent launcher, signals).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "launcher/agents/agent_protocol.h"

namespace hvd::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// One hvd-agent process with its stdin, stdout and stderr on pipes.
class AgentProcess {
 public:
  AgentProcess() {
    int in[2], out[2], err[2];
    EXPECT_EQ(::pipe2(in, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(out, O_CLOEXEC), 0);
    EXPECT_EQ(::pipe2(err, O_CLOEXEC), 0);
    pid_ = ::fork();
    if (pid_ == 0) {
      ::dup2(in[0], 0);
      ::dup2(out[1], 1);
      ::dup2(err[1], 2);
      ::execl(HVD_AGENT_PATH, HVD_AGENT_PATH, static_cast<char*>(nullptr));
      ::_exit(99);
    }
    ::close(in[0]);
    ::close(out[1]);
    ::close(err[1]);
    stdin_ = in[1];
    stdout_ = out[0];
    stderr_ = err[0];
  }
  ~AgentProcess() {
    CloseStdin();
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    ::close(stdout_);
    ::close(stderr_);
  }

  void Send(const std::string& bytes) {
    ASSERT_EQ(::write(stdin_, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  }
  void CloseStdin() {
    if (stdin_ >= 0) ::close(stdin_);
    stdin_ = -1;
  }
  // Reads the agent's frames until a rank's output contains a newline; returns that output
  // up to the newline (bounded: 10 s). Keeps what was read for Frames().
  std::string ReadLine() {
    AgentFrameReader reader(true);
    auto deadline = Clock::now() + std::chrono::seconds(10);
    std::string text;
    while (Clock::now() < deadline) {
      reader.Feed(out_);
      for (;;) {
        auto next = reader.Next();
        if (!next.ok() || !next->has_value()) break;
        if (auto* o = std::get_if<AgentOutput>(&**next)) text += o->data;
      }
      if (size_t nl = text.find('\n'); nl != std::string::npos) return text.substr(0, nl);
      text.clear();
      reader = AgentFrameReader(true);
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buffer[4096];
      ssize_t n = ::read(stdout_, buffer, sizeof(buffer));
      if (n > 0) out_.append(buffer, static_cast<size_t>(n));
    }
    ADD_FAILURE() << "no line; " << out_.size() << " bytes of frames, stderr: " << err_;
    return "";
  }
  // Collects all output and the exit status; fails the test after 10 s.
  int Finish() {
    auto deadline = Clock::now() + std::chrono::seconds(10);
    bool out_open = true, err_open = true;
    while ((out_open || err_open) && Clock::now() < deadline) {
      pollfd p[2] = {{out_open ? stdout_ : -1, POLLIN, 0}, {err_open ? stderr_ : -1, POLLIN, 0}};
      ::poll(p, 2, 100);
      char buffer[4096];
      if (out_open && p[0].revents) {
        ssize_t n = ::read(stdout_, buffer, sizeof(buffer));
        n > 0 ? out_.append(buffer, n) : (out_open = false, out_);
      }
      if (err_open && p[1].revents) {
        ssize_t n = ::read(stderr_, buffer, sizeof(buffer));
        n > 0 ? err_.append(buffer, n) : (err_open = false, err_);
      }
    }
    EXPECT_FALSE(out_open || err_open) << "agent output did not end";
    int status = -1;
    while (Clock::now() < deadline) {
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return status;
      }
      ::usleep(10000);
    }
    ADD_FAILURE() << "agent did not exit";
    return -1;
  }
  // The agent's frames on stdout, decoded.
  std::vector<AgentMessage> Frames() const {
    AgentFrameReader reader(true);
    reader.Feed(out_);
    std::vector<AgentMessage> frames;
    for (;;) {
      auto next = reader.Next();
      EXPECT_TRUE(next.ok()) << next.status().ToString();
      if (!next.ok() || !next->has_value()) return frames;
      frames.push_back(std::move(**next));
    }
  }
  void Signal(int signo) { ::kill(pid_, signo); }
  // Reads the agent's stdout until `count` Exit frames have arrived (bounded: 10 s).
  bool WaitForExits(size_t count) {
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline) {
      size_t exits = 0;
      for (const AgentMessage& m : Frames()) exits += std::holds_alternative<AgentExit>(m) ? 1 : 0;
      if (exits >= count) return true;
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      char buffer[4096];
      ssize_t n = ::read(stdout_, buffer, sizeof(buffer));
      if (n > 0) out_.append(buffer, static_cast<size_t>(n));
    }
    return false;
  }
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int stdin_ = -1, stdout_ = -1, stderr_ = -1;
  std::string out_, err_;
};

AgentHello Hello(double heartbeat_timeout_s = 0, std::string cwd = "") {
  AgentHello h;
  h.grace_period_s = 0.5;
  h.heartbeat_timeout_s = heartbeat_timeout_s;
  h.heartbeat_interval_s = heartbeat_timeout_s > 0 ? 0.1 : 0;
  h.cwd = std::move(cwd);
  return h;
}

std::string Start(uint32_t id, const std::string& script) {
  AgentStart s;
  s.id = id;
  s.argv = {"/bin/sh", "-c", script};
  return EncodeStart(s);
}

bool ProcessExists(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST(AgentProcessTest, AnswersHelloWithReadyThenReportsEachRank) {
  AgentProcess agent;
  agent.Send(EncodeHello(Hello()) + Start(1, "echo one") + Start(2, "exit 4"));
  ASSERT_TRUE(agent.WaitForExits(2));
  agent.CloseStdin();
  EXPECT_EQ(agent.Finish(), 0) << agent.err();
  std::vector<AgentMessage> frames = agent.Frames();
  ASSERT_FALSE(frames.empty());
  EXPECT_GT(std::get<AgentReady>(frames[0]).pid, 0u);
  std::map<uint32_t, int> exits;
  for (const AgentMessage& m : frames) {
    if (auto* e = std::get_if<AgentExit>(&m)) exits[e->id] = e->wait_status;
  }
  EXPECT_EQ(exits, (std::map<uint32_t, int>{{1, 0}, {2, W_EXITCODE(4, 0)}}));
}

TEST(AgentProcessTest, MissingDirectoryFailsEveryStartNamingIt) {
  AgentProcess agent;
  agent.Send(EncodeHello(Hello(0, "/no/such/dir")) + Start(0, "true"));
  EXPECT_EQ(agent.ReadLine(),
            "hvd-agent: cannot change to directory '/no/such/dir': No such "
            "file or directory");
  agent.CloseStdin();
  EXPECT_EQ(agent.Finish(), 0);
  bool exited = false;
  for (const AgentMessage& m : agent.Frames()) {
    if (auto* e = std::get_if<AgentExit>(&m)) exited = e->wait_status == W_EXITCODE(125, 0);
  }
  EXPECT_TRUE(exited);
}

TEST(AgentProcessTest, SilentLauncherStopsEveryRankAndWhatItStarted) {
  // Given a rank with a background grandchild and a 1 s heartbeat timeout
  AgentProcess agent;
  agent.Send(EncodeHello(Hello(1)) + Start(0, "sleep 30 & echo $!; wait"));
  pid_t grandchild = std::stoi(agent.ReadLine());
  ASSERT_TRUE(ProcessExists(grandchild));
  // When the launcher sends nothing more (stdin stays open, as over a dead connection)
  auto begin = Clock::now();
  int status = agent.Finish();
  // Then the agent gives up on it, stops the rank and exits 1, within timeout + grace
  EXPECT_EQ(status, W_EXITCODE(1, 0));
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(4));
  EXPECT_NE(agent.err().find("no sign of life from hvdrun"), std::string::npos) << agent.err();
  EXPECT_FALSE(ProcessExists(grandchild));
  size_t heartbeats = 0;
  for (const AgentMessage& m : agent.Frames()) {
    heartbeats += std::holds_alternative<AgentHeartbeat>(m) ? 1 : 0;
  }
  EXPECT_GE(heartbeats, 5u) << "the agent sends its own heartbeats every 0.1 s";
}

TEST(AgentProcessTest, AnAgentStoppedWithItsLauncherCountsTheSilenceFromItsResume) {
  // Given a session with a 1 s heartbeat timeout, the launcher's heartbeats coming (an agent
  // that ended makes a heartbeat's write fail, not this test die of SIGPIPE)
  ::signal(SIGPIPE, SIG_IGN);
  AgentProcess agent;
  agent.Send(EncodeHello(Hello(1)) + Start(0, "echo started; sleep 30"));
  ASSERT_EQ(agent.ReadLine(), "started");
  const auto beat_for = [&](std::chrono::milliseconds how_long) {
    for (auto end = Clock::now() + how_long; Clock::now() < end;) {
      agent.Send(EncodeLauncherHeartbeat());
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  };
  beat_for(std::chrono::milliseconds(300));
  // When the whole job is stopped for twice the timeout (Slurm's suspend: the agent and hvdrun
  // alike, so no heartbeat is sent meanwhile), then resumed, hvdrun's heartbeats coming again
  // a moment after the agent's
  agent.Signal(SIGSTOP);
  std::this_thread::sleep_for(std::chrono::seconds(2));
  agent.Signal(SIGCONT);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  beat_for(std::chrono::milliseconds(1500));
  agent.CloseStdin();
  // Then the agent kept the session (until 2026-12-01 it took hvdrun for dead at once and
  // stopped every rank, exit 1): the launcher's end closes it cleanly
  EXPECT_EQ(agent.Finish(), W_EXITCODE(0, 0)) << agent.err();
  EXPECT_EQ(agent.err().find("no sign of life"), std::string::npos) << agent.err();
}

TEST(AgentProcessTest, SigtermToTheAgentStopsItsRanks) {
  AgentProcess agent;
  agent.Send(EncodeHello(Hello()) + Start(0, "echo $$; exec sleep 30"));
  pid_t rank = std::stoi(agent.ReadLine());
  agent.Signal(SIGTERM);
  EXPECT_EQ(agent.Finish(), W_EXITCODE(128 + SIGTERM, 0));
  EXPECT_FALSE(ProcessExists(rank));
}

TEST(AgentProcessTest, GarbageInsteadOfAHelloIsRejected) {
  AgentProcess agent;
  agent.Send("GET / HTTP/1.0\r\n\r\n");
  int status = agent.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 125);
  EXPECT_NE(agent.err().find("hvd-agent:"), std::string::npos);
}

TEST(AgentProcessTest, EarlyEndOfStdinStartsNothing) {
  AgentProcess agent;
  agent.CloseStdin();
  int status = agent.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 125);
}

// A peer that is not hvdrun (anything that can write the agent's stdin without speaking the
// protocol) starts nothing: a start frame before the hello, a hello of another protocol
// version, then a start, each end the agent with 125 before any rank runs.
TEST(AgentProcessTest, StartBeforeHelloStartsNothing) {
  const std::string marker = ::testing::TempDir() + "hvd_agent_start_before_hello";
  ::unlink(marker.c_str());
  AgentProcess agent;
  agent.Send(Start(0, "touch " + marker) + EncodeHello(Hello()) + Start(1, "touch " + marker));
  int status = agent.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 125);
  EXPECT_NE(agent.err().find("expected a hello frame first"), std::string::npos) << agent.err();
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "a rank ran";
}

TEST(AgentProcessTest, HelloOfAnotherVersionStartsNothing) {
  const std::string marker = ::testing::TempDir() + "hvd_agent_other_version";
  ::unlink(marker.c_str());
  std::string hello = EncodeHello(Hello());
  hello[4 + 1 + 4 + 3] = 9;  // length, type, "HVDA", then the version's low byte
  AgentProcess agent;
  agent.Send(hello + Start(0, "touch " + marker));
  int status = agent.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 125);
  EXPECT_NE(agent.err().find("version mismatch"), std::string::npos) << agent.err();
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "a rank ran";
}

// Garbage after a valid session start: the agent stops the ranks it runs and ends with 125
// rather than acting on anything after the garbage.
TEST(AgentProcessTest, GarbageMidSessionStopsItsRanksAndStartsNothingMore) {
  const std::string marker = ::testing::TempDir() + "hvd_agent_after_garbage";
  ::unlink(marker.c_str());
  AgentProcess agent;
  agent.Send(EncodeHello(Hello()) + Start(0, "echo $$; exec sleep 30"));
  pid_t rank = std::stoi(agent.ReadLine());
  agent.Send(std::string("\0\0\0\5\x09junk", 9) + Start(1, "touch " + marker));
  int status = agent.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 125);
  EXPECT_NE(agent.err().find("unknown hvd-agent frame type 9"), std::string::npos) << agent.err();
  EXPECT_FALSE(ProcessExists(rank));
  EXPECT_NE(::access(marker.c_str(), F_OK), 0) << "a rank ran after the garbage";
}

}  // namespace
}  // namespace hvd::launcher
