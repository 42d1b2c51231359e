// ElasticAgents against the real hvd-agent started as a local child over pipes
// (StartProcessAgent): an elastic job's per-host sessions are dropped when they end or the
// host leaves, and the next Connect opens a new one.
#include "launcher/elastic/elastic_agents.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <future>
#include <string>

namespace hvd::launcher {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

AgentLinkFactory LocalAgents() {
  return [](const std::string& host, Clock::time_point) {
    return StartProcessAgent({HVD_AGENT_PATH}, {{"PATH", "/usr/bin:/bin"}}, "agent for " + host,
                             std::chrono::milliseconds(5000));
  };
}

AgentSession::Options SessionOptions() {
  AgentSession::Options options;
  control::JobKey key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(0x30 + i);
  options.hello.job_key = key;
  options.hello.grace_period_s = 0.5;
  options.hello.cwd = "/tmp";
  return options;
}

bool Readable(int fd, seconds limit) {
  pollfd p = {fd, POLLIN, 0};
  return ::poll(&p, 1, static_cast<int>(limit.count() * 1000)) == 1;
}

// The next finished connection attempt (bounded).
std::pair<std::string, Status> NextFinished(ElasticAgents& agents) {
  auto deadline = Clock::now() + seconds(15);
  while (Clock::now() < deadline) {
    if (!Readable(agents.event_fd(), seconds(1))) continue;
    auto finished = agents.TakeFinished();
    if (!finished.empty()) return finished.front();
  }
  ADD_FAILURE() << "no connection attempt finished within 15 s";
  return {"", Status::Timeout("none")};
}

bool Gone(pid_t pid) {
  auto deadline = Clock::now() + seconds(15);
  while (Clock::now() < deadline) {
    if (::kill(pid, 0) != 0) return true;  // exited and reaped by its link
    ::poll(nullptr, 0, 20);
  }
  return false;
}

TEST(ElasticAgentsTest, AHostWhoseAgentDiedGetsANewSessionOnTheNextConnect) {
  // Given a host with a session
  ElasticAgents agents(LocalAgents(), SessionOptions(), seconds(10));
  ASSERT_TRUE(agents.Init().ok());
  agents.Connect("h1");
  auto [host, status] = NextFinished(agents);
  ASSERT_EQ(host, "h1");
  ASSERT_TRUE(status.ok()) << status.ToString();
  AgentSession* first = agents.session("h1");
  ASSERT_NE(first, nullptr);
  const pid_t first_pid = first->ready().pid;
  // When its agent is killed (the host was lost),
  ::kill(first_pid, SIGKILL);
  ASSERT_TRUE(Readable(first->end_event_fd(), seconds(10)));
  // then the ended session is dropped, and the next Connect opens a new one that runs ranks.
  EXPECT_EQ(agents.session("h1"), nullptr);
  agents.Connect("h1");
  ASSERT_TRUE(NextFinished(agents).second.ok());
  AgentSession* second = agents.session("h1");
  ASSERT_NE(second, nullptr);
  EXPECT_NE(second->ready().pid, first_pid);
  Result<SpawnedRank> rank = second->StartRank(7, {"/bin/sh", "-c", "exit 3"}, {});
  ASSERT_TRUE(rank.ok()) << rank.status().ToString();
  ASSERT_TRUE(Readable(rank->handle->exit_event_fd(), seconds(10)));
  EXPECT_EQ(rank->handle->TryWait(), std::optional<int>(W_EXITCODE(3, 0)));
  ::close(rank->stdout_fd);
  ::close(rank->stderr_fd);
}

TEST(ElasticAgentsTest, ReleaseClosesTheSessionAndItsAgentEnds) {
  ElasticAgents agents(LocalAgents(), SessionOptions(), seconds(10));
  ASSERT_TRUE(agents.Init().ok());
  agents.Connect("h1");
  ASSERT_TRUE(NextFinished(agents).second.ok());
  const pid_t pid = agents.session("h1")->ready().pid;
  // When the host leaves the job, Release returns at once and the agent exits on its own.
  auto begin = Clock::now();
  agents.Release("h1");
  EXPECT_LT(Clock::now() - begin, seconds(1));
  EXPECT_EQ(agents.session("h1"), nullptr);
  EXPECT_TRUE(Gone(pid)) << "agent " << pid << " still runs";
}

TEST(ElasticAgentsTest, AHostReleasedWhileConnectingGetsNoSession) {
  // The connection is held until the host has been released.
  std::promise<void> released;
  std::shared_future<void> gate = released.get_future().share();
  AgentLinkFactory connect = [gate, local = LocalAgents()](const std::string& host,
                                                           Clock::time_point deadline) {
    gate.wait_until(deadline);
    return local(host, deadline);
  };
  ElasticAgents agents(connect, SessionOptions(), seconds(10));
  ASSERT_TRUE(agents.Init().ok());
  agents.Connect("h1");
  agents.Release("h1");
  released.set_value();
  auto [host, status] = NextFinished(agents);
  EXPECT_EQ(status.code(), StatusCode::kAborted) << status.ToString();
  EXPECT_EQ(agents.session("h1"), nullptr);
}

}  // namespace
}  // namespace hvd::launcher
