// AgentSession against the real hvd-agent started as a local child over pipes
// (StartProcessAgent): the launcher's side of the protocol end to end, without SSH.
#include "launcher/agents/agent_session.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "launcher/agents/agent_fleet.h"
#include "launcher/local/stack_dump.h"
#include "test/support/memory_cgroup.h"

namespace hvd::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using ::testing::HasSubstr;

// Everything a rank wrote and how it ended.
struct RankResult {
  std::string out, err;
  int status = -1;
  std::string transport;
};

// Reads the rank's pipes until both end and its exit event fires (bounded by `limit`).
RankResult Collect(SpawnedRank& rank, std::chrono::seconds limit = std::chrono::seconds(15)) {
  RankResult r;
  auto deadline = Clock::now() + limit;
  int fds[2] = {rank.stdout_fd, rank.stderr_fd};
  std::string* sinks[2] = {&r.out, &r.err};
  while ((fds[0] >= 0 || fds[1] >= 0) && Clock::now() < deadline) {
    pollfd p[2] = {{fds[0], POLLIN, 0}, {fds[1], POLLIN, 0}};
    ::poll(p, 2, 100);
    for (int i = 0; i < 2; ++i) {
      if (fds[i] < 0 || p[i].revents == 0) continue;
      char buffer[4096];
      ssize_t n = ::read(fds[i], buffer, sizeof(buffer));
      if (n > 0) {
        sinks[i]->append(buffer, static_cast<size_t>(n));
      } else if (n == 0) {
        ::close(fds[i]);
        fds[i] = -1;
      }
    }
  }
  EXPECT_TRUE(fds[0] < 0 && fds[1] < 0) << "rank output did not end";
  pollfd e = {rank.handle->exit_event_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&e, 1, static_cast<int>(limit.count() * 1000)), 1) << "no exit event";
  std::optional<int> status = rank.handle->TryWait();
  EXPECT_TRUE(status.has_value());
  r.status = status.value_or(-1);
  r.transport = rank.handle->TransportError();
  return r;
}

std::string ReadLine(int fd) {
  std::string line;
  auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char c;
    if (::read(fd, &c, 1) != 1 || c == '\n') break;
    line += c;
  }
  return line;
}

bool ProcessExists(pid_t pid) { return ::kill(pid, 0) == 0; }

// A remote login's background job (login commands for Open): waits, at most 20 s, until the
// rank made with RankOfLoginJob(go) creates `go`, runs `command`, then creates `go`.done, which
// that rank waits for before it prints "ran" and ends: `command` runs while the session is open.
std::string LoginJob(const std::string& go, const std::string& command) {
  return "(i=0; while [ ! -e " + go + " ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; " +
         command + "; touch " + go + ".done) & true";
}

std::string RankOfLoginJob(const std::string& go) {
  return "touch " + go + "; while [ ! -e " + go + ".done ]; do sleep 0.05; done; echo ran";
}

class AgentSessionTest : public ::testing::Test {
 protected:
  // `login`: shell commands run before the agent, as a remote login's ~/.bashrc would.
  std::unique_ptr<AgentSession> Open(double heartbeat_timeout_s = 0, double grace_s = 0.5,
                                     const std::string& login = "") {
    std::vector<std::string> argv = {HVD_AGENT_PATH};
    if (!login.empty()) argv = {"/bin/sh", "-c", login + "; exec " + std::string(HVD_AGENT_PATH)};
    auto link = StartProcessAgent(argv, {{"PATH", "/usr/bin:/bin"}}, "local agent",
                                  std::chrono::seconds(5));
    EXPECT_TRUE(link.ok()) << link.status().ToString();
    if (!link.ok()) return nullptr;
    AgentSession::Options options;
    options.host = "testhost";
    control::JobKey key{};
    for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(0xa0 + i);
    options.hello.job_key = key;
    options.hello.grace_period_s = grace_s;
    options.hello.heartbeat_timeout_s = heartbeat_timeout_s;
    options.hello.heartbeat_interval_s = heartbeat_timeout_s / 5;
    options.hello.cwd = "/tmp";
    auto session =
        AgentSession::Open(std::move(*link), options, Clock::now() + std::chrono::seconds(10));
    EXPECT_TRUE(session.ok()) << session.status().ToString();
    return session.ok() ? std::move(*session) : nullptr;
  }

  SpawnedRank Start(AgentSession& session, uint32_t id, const std::string& script,
                    std::map<std::string, std::string> env = {}) {
    auto rank = session.StartRank(id, {"/bin/sh", "-c", script}, env);
    EXPECT_TRUE(rank.ok()) << rank.status().ToString();
    return rank.ok() ? std::move(*rank) : SpawnedRank();
  }
};

TEST_F(AgentSessionTest, RanksOnOneAgentKeepTheirOwnOutputAndExitStatus) {
  // Given one agent running three ranks at once
  auto session = Open();
  ASSERT_TRUE(session);
  EXPECT_EQ(session->ready().pid > 0, true);
  SpawnedRank a =
      Start(*session, 0, "echo out $GREETING; pwd; echo err >&2; exit 3", {{"GREETING", "hello"}});
  SpawnedRank b = Start(*session, 1, "for i in 1 2 3; do echo b$i; done");
  SpawnedRank c = Start(*session, 2, "kill -SEGV $$");
  // When they finish
  RankResult ra = Collect(a), rb = Collect(b), rc = Collect(c);
  // Then each stream and status is the rank's own, in the job's cwd
  EXPECT_EQ(ra.out, "out hello\n/tmp\n");
  EXPECT_EQ(ra.err, "err\n");
  EXPECT_EQ(ra.status, W_EXITCODE(3, 0));
  EXPECT_EQ(rb.out, "b1\nb2\nb3\n");
  EXPECT_EQ(rb.status, 0);
  EXPECT_TRUE(WIFSIGNALED(rc.status) && WTERMSIG(rc.status) == SIGSEGV) << rc.status;
  EXPECT_EQ(ra.transport, "");
}

// A remote login that prints on stdout before hvd-agent runs (an echo in ~/.bashrc, a module
// system's banner): its lines are shown as the host's, and the session works. Until 2026-12-01
// "Welc" was read as a frame's length: "hvd-agent frame of 1466264675 bytes exceeds the limit".
TEST_F(AgentSessionTest, ALoginsOwnOutputBeforeTheAgentIsShownAndTheSessionWorks) {
  ::testing::internal::CaptureStderr();
  auto session = Open(0, 0.5, "echo 'Welcome to the cluster'; printf 'no newline at its end'");
  std::string shown = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(session);
  EXPECT_THAT(shown, HasSubstr("testhost: Welcome to the cluster\n"));
  EXPECT_THAT(shown, HasSubstr("testhost: no newline at its end"));
  SpawnedRank a = Start(*session, 0, "echo ran");
  RankResult ra = Collect(a);
  EXPECT_EQ(ra.out, "ran\n");
  EXPECT_EQ(ra.status, 0);
}

// A remote login or tool that writes to stderr without newlines: its output is shown in lines
// of at most 64 KiB, cut where they are, not held whole until the agent ends (until 2026-12-01
// the buffer grew without bound and was rescanned at every 4 KiB read).
TEST_F(AgentSessionTest, StderrWithoutNewlinesIsShownInBoundedLines) {
  // (The login's background writer starts once the rank, so the session, is up, and the rank
  // ends once it has written: the 4 MB pass while the session is open.)
  const std::string go = "/tmp/hvd-diag-test-" + std::to_string(::getpid());
  ::testing::internal::CaptureStderr();
  {
    auto session = Open(0, 0.5, LoginJob(go, "head -c 4000000 /dev/zero | tr '\\0' x >&2"));
    ASSERT_TRUE(session);
    SpawnedRank a = Start(*session, 0, RankOfLoginJob(go));
    RankResult ra = Collect(a);
    EXPECT_EQ(ra.out, "ran\n");
  }
  std::remove(go.c_str());
  std::remove((go + ".done").c_str());
  const std::string shown = ::testing::internal::GetCapturedStderr();
  size_t longest = 0, xs = 0, start = 0;
  while (start < shown.size()) {
    size_t end = shown.find('\n', start);
    if (end == std::string::npos) end = shown.size();
    longest = std::max(longest, end - start);
    start = end + 1;
  }
  for (char c : shown) xs += c == 'x';
  EXPECT_LE(longest, size_t{(64 << 10) + 100});
  EXPECT_THAT(shown, HasSubstr("testhost: xxxx"));
  EXPECT_THAT(shown, HasSubstr("(line cut at 64 KiB)"));
  // (The writer ends once all but what the pipe holds, at most 1 MiB, was read: many cut lines.)
  EXPECT_GE(xs, size_t{2 * (64 << 10)});
}

// The agent's stdout and stderr are non-blocking for its own event loop, but a remote login's
// background job shares those pipes: it must still see them blocking. Until 2026-12-02 the agent
// set O_NONBLOCK on the shared descriptions, and such a job's writes failed with EAGAIN whenever
// the launcher fell behind (the test above then saw one 64 KiB line of its 4 MB).
TEST_F(AgentSessionTest, ALoginsBackgroundJobKeepsBlockingOutput) {
  const std::string go = "/tmp/hvd-flags-test-" + std::to_string(::getpid());
  ::testing::internal::CaptureStderr();
  {
    auto session = Open(
        0, 0.5,
        "exec 3>&1; " + LoginJob(go, "grep -H ^flags /proc/self/fdinfo/3 /proc/self/fdinfo/2 >&2"));
    ASSERT_TRUE(session);
    SpawnedRank a = Start(*session, 0, RankOfLoginJob(go));
    EXPECT_EQ(Collect(a).out, "ran\n");
  }
  std::remove(go.c_str());
  std::remove((go + ".done").c_str());
  const std::string shown = ::testing::internal::GetCapturedStderr();
  int seen = 0;
  for (const char* fd : {"fdinfo/3:flags:", "fdinfo/2:flags:"}) {
    size_t at = shown.find(fd);
    if (at == std::string::npos) continue;
    ++seen;
    const long flags = std::strtol(shown.c_str() + at + std::strlen(fd), nullptr, 8);
    EXPECT_EQ(flags & O_NONBLOCK, 0) << fd << " in:\n" << shown;
  }
  EXPECT_EQ(seen, 2) << shown;
}

// A login that prints more than 64 KiB before any greeting (or a command that is no hvd-agent
// of this build) fails the session naming what it printed, without waiting for the timeout.
TEST_F(AgentSessionTest, ALoginThatNeverLetsTheAgentGreetFailsNamingItsOutput) {
  auto link = StartProcessAgent({"/bin/sh", "-c", "yes 'banner line'"}, {{"PATH", "/usr/bin:/bin"}},
                                "local agent", std::chrono::seconds(5));
  ASSERT_TRUE(link.ok()) << link.status().ToString();
  AgentSession::Options options;
  options.host = "testhost";
  auto start = Clock::now();
  auto session =
      AgentSession::Open(std::move(*link), options, Clock::now() + std::chrono::seconds(20));
  ASSERT_FALSE(session.ok());
  EXPECT_LT(Clock::now() - start, std::chrono::seconds(10));
  EXPECT_THAT(session.status().message(), HasSubstr("without hvd-agent's greeting"));
  EXPECT_THAT(session.status().message(), HasSubstr("it began: 'banner line\\x0abanner line"));
}

// A rank exits while the launcher reads nothing (a slow console): the agent, its output buffer
// full, stops reading the rank's pipes. Its last words must still arrive once the launcher reads
// again. Until 2026-11-30 the 2 s the agent gives a finished rank's pipes ran out unread, and
// the tail (here the stderr line, in real jobs often the traceback) was thrown away.
TEST_F(AgentSessionTest, ARanksLastOutputSurvivesALauncherThatFellBehind) {
  auto session = Open();
  ASSERT_TRUE(session);
  // A child of the rank fills stdout (it blocks once every buffer on the way is full); the rank
  // writes its last line a second later and exits (the child dies with its group).
  SpawnedRank rank =
      Start(*session, 0, "(head -c 8000000 /dev/zero &); sleep 1; echo LAST >&2; exit 3");
  std::this_thread::sleep_for(std::chrono::milliseconds(4000));  // the launcher reads nothing
  RankResult r = Collect(rank);
  EXPECT_EQ(r.err, "LAST\n");
  EXPECT_EQ(r.status, W_EXITCODE(3, 0));
  EXPECT_GT(r.out.size(), size_t{1} << 20) << "the launcher's side never fell behind";
}

// The agent ends on its own (killed here; its heartbeat timeout or an elastic retire alike)
// while the session holds a rank's output it could not yet write (the launcher had not read):
// what it holds still reaches the launcher once it reads. Until 2026-12-01 the session finished
// the rank at once and up to 256 KiB of its last output was lost.
TEST_F(AgentSessionTest, OutputHeldWhenTheAgentEndsStillArrives) {
  auto session = Open();
  ASSERT_TRUE(session);
  SpawnedRank rank = Start(*session, 0, "echo $$ >&2; head -c 200000 /dev/zero; exit 3");
  const pid_t pid = std::stoi(ReadLine(rank.stderr_fd));
  // The rank writes everything and exits while the launcher reads nothing (the agent reaps it);
  // its output fills the launcher's pipe, the session holds the rest.
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  int queued = 0;
  while ((ProcessExists(pid) || queued < 65536) && Clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ::ioctl(rank.stdout_fd, FIONREAD, &queued);
  }
  ASSERT_FALSE(ProcessExists(pid)) << "the rank did not get its output out";
  ASSERT_GE(queued, 65536) << "the launcher's pipe never filled: nothing is held";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the agent's last frames
  ::kill(session->ready().pid, SIGKILL);
  RankResult r = Collect(rank);
  EXPECT_EQ(r.out.size(), 200000u);
}

TEST_F(AgentSessionTest, JobKeyArrivesInAMemfdNamedByHvdSecretFd) {
  auto session = Open();
  ASSERT_TRUE(session);
  SpawnedRank rank =
      Start(*session, 0, "od -An -tx1 -v /proc/self/fd/$HVD_SECRET_FD | tr -d ' \\n'",
            {{"HVD_SECRET_FD", "99"}});
  RankResult r = Collect(rank);
  std::string expected;
  char hex[3];
  for (size_t i = 0; i < 32; ++i) {
    snprintf(hex, sizeof(hex), "%02x", static_cast<unsigned>(0xa0 + i));
    expected += hex;
  }
  EXPECT_EQ(r.out, expected) << r.err;
}

TEST_F(AgentSessionTest, RanksComeAndGoOnALiveSession) {
  // Given a session whose first rank has finished
  auto session = Open();
  ASSERT_TRUE(session);
  SpawnedRank first = Start(*session, 4, "echo first");
  EXPECT_EQ(Collect(first).out, "first\n");
  // When a rank is started later, the same id is reused, and a running one is stopped alone
  SpawnedRank again = Start(*session, 4, "echo again");
  SpawnedRank sleeper = Start(*session, 5, "echo up; exec sleep 30");
  EXPECT_FALSE(session->StartRank(5, {"true"}, {}).ok()) << "id 5 is running";
  ASSERT_EQ(ReadLine(sleeper.stdout_fd), "up");
  SpawnedRank other = Start(*session, 6, "echo up; exec sleep 30");
  ASSERT_EQ(ReadLine(other.stdout_fd), "up");
  session->Stop(5);
  // Then each is reported on its own, and the other rank is untouched
  EXPECT_EQ(Collect(again).out, "again\n");
  RankResult stopped = Collect(sleeper);
  EXPECT_TRUE(WIFSIGNALED(stopped.status) && WTERMSIG(stopped.status) == SIGTERM);
  EXPECT_FALSE(other.handle->TryWait().has_value());
  other.handle->Signal(SIGUSR1);
  RankResult signalled = Collect(other);
  EXPECT_TRUE(WIFSIGNALED(signalled.status) && WTERMSIG(signalled.status) == SIGUSR1);
}

TEST_F(AgentSessionTest, CloseStopsEveryRankAndWhatItStarted) {
  auto session = Open();
  ASSERT_TRUE(session);
  SpawnedRank a = Start(*session, 0, "sleep 30 & echo $!; wait");
  SpawnedRank b = Start(*session, 1, "trap '' TERM; echo $$; while :; do sleep 1; done");
  pid_t grandchild = std::stoi(ReadLine(a.stdout_fd));
  pid_t stubborn = std::stoi(ReadLine(b.stdout_fd));
  ASSERT_TRUE(ProcessExists(grandchild) && ProcessExists(stubborn));
  auto begin = Clock::now();
  session->Close();
  RankResult ra = Collect(a), rb = Collect(b);
  EXPECT_TRUE(WIFSIGNALED(ra.status) && WTERMSIG(ra.status) == SIGTERM) << ra.status;
  EXPECT_TRUE(WIFSIGNALED(rb.status) && WTERMSIG(rb.status) == SIGKILL) << rb.status;
  EXPECT_LT(Clock::now() - begin, std::chrono::seconds(5));
  EXPECT_FALSE(ProcessExists(grandchild));
  EXPECT_FALSE(ProcessExists(stubborn));
  EXPECT_FALSE(session->StartRank(2, {"true"}, {}).ok());
  session.reset();  // returns promptly: the agent has already ended
}

TEST_F(AgentSessionTest, MissingProgramIsExit127WithItsMessage) {
  auto session = Open();
  ASSERT_TRUE(session);
  auto rank = session->StartRank(0, {"no-such-program-hvd"}, {});
  ASSERT_TRUE(rank.ok());
  RankResult r = Collect(*rank);
  EXPECT_EQ(r.status, W_EXITCODE(127, 0));
  EXPECT_THAT(r.err, HasSubstr("cannot execute 'no-such-program-hvd'"));
}

// A rank that outgrows its memory is killed by the kernel's OOM killer on the agent's host; the
// agent reads the kernel's record of it and the launcher's handle says so, where "SIGKILL"
// alone would tell the user nothing. A real OOM kill: the rank joins a memory cgroup of 64 MiB
// and reads 256 MiB into one buffer.
TEST_F(AgentSessionTest, RankKilledByTheOomKillerIsReportedSo) {
  std::string why_not;
  std::unique_ptr<testing::MemoryCgroup> cgroup = testing::MemoryCgroup::Create(64 << 20, &why_not);
  if (!cgroup) GTEST_SKIP() << why_not;
  auto session = Open();
  ASSERT_TRUE(session);
  SpawnedRank rank = Start(
      *session, 0,
      "echo $$ > " + cgroup->procs() + " && exec dd if=/dev/zero of=/dev/null bs=256M count=1");
  RankResult r = Collect(rank);
  ASSERT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL) << r.status << " " << r.err;
  std::optional<std::string> cause = rank.handle->KillCause();
  ASSERT_TRUE(cause.has_value());
  EXPECT_THAT(*cause, HasSubstr("killed by the kernel's OOM killer ("));
  EXPECT_THAT(*cause, HasSubstr("; dd, anon-rss "));
}

// A rank killed by SIGKILL from elsewhere is not said to be out of memory.
TEST_F(AgentSessionTest, RankKilledByAnotherProcessIsNotCalledOutOfMemory) {
  auto session = Open();
  ASSERT_TRUE(session);
  SpawnedRank rank = Start(*session, 0, "kill -9 $$");
  RankResult r = Collect(rank);
  ASSERT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGKILL) << r.status;
  std::optional<std::string> cause = rank.handle->KillCause();
  // (where the kernel log cannot be read, another test's OOM kill meanwhile would be counted,
  // but never named as this rank's)
  EXPECT_TRUE(!cause || cause->find("killed by") == std::string::npos) << *cause;
}

// The state letter of /proc/<pid>/stat ('T' when stopped), '?' when unreadable.
char ProcessState(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t close = text.rfind(')');
  return close == std::string::npos || close + 2 >= text.size() ? '?' : text[close + 2];
}

// A stopped rank (SIGSTOP, a ^Z) ends by the launcher's SIGTERM: the agent follows it with
// SIGCONT, where the rank would otherwise hold it until a SIGKILL.
TEST_F(AgentSessionTest, AStoppedRankEndsByTheSigterm) {
  auto session = Open();
  ASSERT_TRUE(session);
  const std::string flag = ::testing::TempDir() + "hvd-stopped-" + std::to_string(::getpid());
  SpawnedRank rank = Start(*session, 0,
                           "echo $$ > " + flag + ".tmp && mv " + flag + ".tmp " + flag +
                               " && kill -STOP $$ && sleep 60");
  pid_t pid = -1;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && (pid <= 0 || ProcessState(pid) != 'T')) {
    std::ifstream(flag) >> pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::unlink(flag.c_str());
  ASSERT_EQ(ProcessState(pid), 'T') << "the rank did not stop";
  rank.handle->Signal(SIGTERM);
  RankResult r = Collect(rank, std::chrono::seconds(10));
  EXPECT_TRUE(WIFSIGNALED(r.status) && WTERMSIG(r.status) == SIGTERM) << r.status;
}

TEST_F(AgentSessionTest, TheStackSignalReachesOnlyTheProcessesThatDumpOnIt) {
  // Given a rank whose shell (not exec) runs a Python that dumps its stack on kStackSignal (as
  // hvd's module registers it), and a plain shell rank that catches nothing; both wait for
  // `go` to exist
  auto session = Open();
  ASSERT_TRUE(session);
  const std::string go = ::testing::TempDir() + "hvd-stack-go-" + std::to_string(::getpid());
  const std::string python =
      "/usr/bin/python3 -c 'import faulthandler, os, time\n"
      "faulthandler.register(" +
      std::to_string(kStackSignal) +
      ", all_threads=True)\n"
      "def where_the_rank_waits():\n"
      "    print(\"up\", flush=True)\n"
      "    while not os.path.exists(\"" +
      go +
      "\"): time.sleep(0.02)\n"
      "where_the_rank_waits()'";
  SpawnedRank dumper = Start(*session, 0, python + "; echo shell-after-python");
  SpawnedRank plain =
      Start(*session, 1, "echo up; while [ ! -e " + go + " ]; do sleep 0.02; done; echo plain");
  ASSERT_EQ(ReadLine(dumper.stdout_fd), "up");
  ASSERT_EQ(ReadLine(plain.stdout_fd), "up");
  // When hvdrun asks both for their stacks through the agent
  dumper.handle->Signal(kStackSignal);
  plain.handle->Signal(kStackSignal);
  // Then the Python prints its stack and runs on, and neither shell is ended by the signal
  std::string err;
  const auto deadline = Clock::now() + std::chrono::seconds(10);
  while (Clock::now() < deadline && err.find("<module>") == std::string::npos) {
    pollfd p{dumper.stderr_fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    char buffer[4096];
    ssize_t n = ::read(dumper.stderr_fd, buffer, sizeof(buffer));
    if (n <= 0) break;
    err.append(buffer, static_cast<size_t>(n));
  }
  EXPECT_THAT(err, HasSubstr("in where_the_rank_waits"));
  std::ofstream(go).put('\n');
  RankResult d = Collect(dumper);
  RankResult p = Collect(plain);
  ::unlink(go.c_str());
  EXPECT_EQ(d.status, 0) << d.err;
  EXPECT_THAT(d.out, HasSubstr("shell-after-python"));
  EXPECT_EQ(p.status, 0) << p.err;
  EXPECT_THAT(p.out, HasSubstr("plain"));
  // The agent says so of the rank that has no process to print stacks, on its stderr.
  EXPECT_THAT(p.err, HasSubstr("hvd-agent: no process of this rank prints stacks"));
  EXPECT_THAT(d.err, ::testing::Not(HasSubstr("hvd-agent: no process")));
}

TEST_F(AgentSessionTest, SilentAgentIsDeclaredLostWithinTheTimeout) {
  // Given a session with a 1 s heartbeat timeout and a running rank
  auto session = Open(/*heartbeat_timeout_s=*/1);
  ASSERT_TRUE(session);
  SpawnedRank rank = Start(*session, 3, "echo up; exec sleep 30");
  ASSERT_EQ(ReadLine(rank.stdout_fd), "up");
  // When the agent stops answering (as a host cut off the network does)
  pid_t agent = static_cast<pid_t>(session->ready().pid);
  ::kill(agent, SIGSTOP);
  auto begin = Clock::now();
  RankResult r = Collect(rank);
  auto took = Clock::now() - begin;
  ::kill(agent, SIGCONT);
  // Then the rank ends as lost (255), naming the host, within about the timeout
  EXPECT_EQ(r.status, W_EXITCODE(255, 0));
  EXPECT_THAT(r.transport, HasSubstr("host testhost lost: no sign of life"));
  EXPECT_GE(took, std::chrono::milliseconds(700));
  EXPECT_LT(took, std::chrono::milliseconds(2500));
  EXPECT_FALSE(session->status().ok());
  pollfd ended{session->end_event_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&ended, 1, 0), 1) << "end_event_fd not readable after the loss";
}

TEST_F(AgentSessionTest, KilledAgentEndsItsRanksAsLost) {
  auto session = Open();
  ASSERT_TRUE(session);
  SpawnedRank rank = Start(*session, 0, "echo $$; exec sleep 30");
  pid_t pid = std::stoi(ReadLine(rank.stdout_fd));
  ::kill(static_cast<pid_t>(session->ready().pid), SIGKILL);
  RankResult r = Collect(rank);
  EXPECT_EQ(r.status, W_EXITCODE(255, 0));
  EXPECT_THAT(r.transport, HasSubstr("lost hvd-agent on testhost: local agent ended (SIGKILL"));
  auto deadline = Clock::now() + std::chrono::seconds(5);  // PR_SET_PDEATHSIG
  while (ProcessExists(pid) && Clock::now() < deadline) ::usleep(10000);
  EXPECT_FALSE(ProcessExists(pid));
}

TEST(AgentFleetTest, OneFailingHostStartsNothingAndNamesTheReason) {
  // Given three hosts of which one cannot be connected and one has no agent binary
  AgentLinkFactory connect = [](const std::string& host,
                                Clock::time_point) -> Result<std::unique_ptr<AgentLink>> {
    if (host == "down") return Status::Timeout("ssh to root@down:22: TCP connect got no answer");
    std::string agent = host == "noagent" ? "/no/such/hvd-agent" : HVD_AGENT_PATH;
    return StartProcessAgent({"/bin/sh", "-c", "exec \"$0\"", agent}, {}, "sh on " + host,
                             std::chrono::seconds(5));
  };
  AgentSession::Options options;
  auto fleet = AgentFleet::Open({"good", "down", "noagent"}, connect, options,
                                Clock::now() + std::chrono::seconds(10), 2);
  // Then the whole fleet fails with one line per failing host
  ASSERT_FALSE(fleet.ok());
  const std::string& m = fleet.status().message();
  EXPECT_THAT(m, HasSubstr("cannot reach 2 of 3 remote hosts; nothing was started"));
  EXPECT_THAT(m, HasSubstr("\n  down: timeout: ssh to root@down:22"));
  EXPECT_THAT(m, HasSubstr("\n  noagent: agent: lost hvd-agent on noagent: sh on noagent ended "
                           "(exit code 127)"));
  EXPECT_THAT(m, HasSubstr("/no/such/hvd-agent"));  // the shell's own message
  EXPECT_THAT(m, ::testing::Not(HasSubstr("good:")));
}

TEST(AgentFleetTest, ReasonsOfSshFailures) {
  EXPECT_EQ(ConnectFailureReason(Status::PermissionDenied("HOST KEY OF x HAS CHANGED")),
            "host key");
  EXPECT_EQ(ConnectFailureReason(Status::PermissionDenied("host root@x:22 is not in /k")),
            "host key");
  EXPECT_EQ(ConnectFailureReason(Status::PermissionDenied("public-key authentication failed")),
            "auth");
  EXPECT_EQ(ConnectFailureReason(Status::InvalidArgument("ssh identity file '/k' is missing")),
            "auth");
  EXPECT_EQ(ConnectFailureReason(Status::IoError("Connection refused (is sshd listening?)")),
            "refused");
  EXPECT_EQ(ConnectFailureReason(Status::Timeout("no answer")), "timeout");
  EXPECT_EQ(ConnectFailureReason(Status::IoError("No route to host")), "unreachable");
  EXPECT_EQ(ConnectFailureReason(Status::InvalidArgument("cannot resolve host name 'x'")), "name");
}

}  // namespace
}  // namespace hvd::launcher
