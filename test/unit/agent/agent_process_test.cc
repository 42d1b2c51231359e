// Drives the real hvd-agent binary over pipes, as sshd would, without SSH.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "launcher/remote_protocol.h"

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
  // Reads one line of the rank's stdout (bounded: 10 s).
  std::string ReadLine() {
    std::string line;
    char c;
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline) {
      pollfd p{stdout_, POLLIN, 0};
      if (::poll(&p, 1, 100) <= 0) continue;
      if (::read(stdout_, &c, 1) != 1 || c == '\n') break;
      line += c;
    }
    return line;
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
  const std::string& out() const { return out_; }
  const std::string& err() const { return err_; }

 private:
  pid_t pid_ = -1;
  bool reaped_ = false;
  int stdin_ = -1, stdout_ = -1, stderr_ = -1;
  std::string out_, err_;
};

RemoteRankRequest Shell(const std::string& script) {
  RemoteRankRequest r;
  r.argv = {"/bin/sh", "-c", script};
  r.grace_period_s = 0.5;
  return r;
}

bool ProcessExists(pid_t pid) { return ::kill(pid, 0) == 0; }

TEST(AgentProcessTest, RelaysOutputAndExitCode) {
  AgentProcess agent;
  RemoteRankRequest r = Shell("echo out $GREETING; pwd; echo err >&2; exit 3");
  r.env["GREETING"] = "hello";
  r.cwd = "/tmp";
  agent.Send(EncodeStartFrame(r));
  int status = agent.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(agent.out(), "out hello\n/tmp\n");
  EXPECT_EQ(agent.err(), "err\n");
}

TEST(AgentProcessTest, JobKeyArrivesInAMemfdNamedByHvdSecretFd) {
  AgentProcess agent;
  RemoteRankRequest r = Shell("od -An -tx1 -v /proc/self/fd/$HVD_SECRET_FD | tr -d ' \\n'");
  control::JobKey key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(0xa0 + i);
  r.job_key = key;
  agent.Send(EncodeStartFrame(r));
  ASSERT_EQ(agent.Finish(), 0) << agent.err();
  std::string expected;
  char hex[3];
  for (uint8_t b : key) {
    snprintf(hex, sizeof(hex), "%02x", b);
    expected += hex;
  }
  EXPECT_EQ(agent.out(), expected);
}

TEST(AgentProcessTest, SignalFrameReachesTheRankAndTheAgentDiesTheSameWay) {
  AgentProcess agent;
  agent.Send(EncodeStartFrame(Shell("echo ready; exec sleep 30")));
  ASSERT_EQ(agent.ReadLine(), "ready");
  agent.Send(EncodeSignalFrame(SIGUSR1));
  int status = agent.Finish();
  ASSERT_TRUE(WIFSIGNALED(status)) << status;
  EXPECT_EQ(WTERMSIG(status), SIGUSR1);
}

TEST(AgentProcessTest, EndOfStdinKillsTheWholeProcessGroup) {
  // Given a rank that started a background grandchild
  AgentProcess agent;
  agent.Send(EncodeStartFrame(Shell("sleep 30 & echo $!; wait")));
  pid_t grandchild = std::stoi(agent.ReadLine());
  ASSERT_TRUE(ProcessExists(grandchild));
  // When the launcher's side of stdin goes away
  auto start = Clock::now();
  agent.CloseStdin();
  int status = agent.Finish();
  // Then the agent ends promptly and nothing of the rank is left
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_FALSE(ProcessExists(grandchild));
}

TEST(AgentProcessTest, RankIgnoringSigtermGetsSigkillAfterTheGracePeriod) {
  AgentProcess agent;
  agent.Send(EncodeStartFrame(Shell("trap '' TERM; echo ready; while :; do sleep 1; done")));
  ASSERT_EQ(agent.ReadLine(), "ready");
  auto start = Clock::now();
  agent.CloseStdin();
  int status = agent.Finish();
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << status;
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(400));
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(5));
}

TEST(AgentProcessTest, MissingProgramExits127WithAClearMessage) {
  AgentProcess agent;
  RemoteRankRequest r;
  r.argv = {"no-such-program-hvd"};
  agent.Send(EncodeStartFrame(r));
  int status = agent.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 127);
  EXPECT_NE(agent.err().find("cannot execute 'no-such-program-hvd'"), std::string::npos)
      << agent.err();
}

TEST(AgentProcessTest, MissingDirectoryIsNamed) {
  AgentProcess agent;
  RemoteRankRequest r = Shell("true");
  r.cwd = "/no/such/dir";
  agent.Send(EncodeStartFrame(r));
  int status = agent.Finish();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 125);
  EXPECT_NE(agent.err().find("/no/such/dir"), std::string::npos) << agent.err();
}

TEST(AgentProcessTest, GarbageInsteadOfAStartFrameIsRejected) {
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

}  // namespace
}  // namespace hvd::launcher
