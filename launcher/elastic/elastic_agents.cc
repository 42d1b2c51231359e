#include "launcher/elastic/elastic_agents.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>
#include <functional>

namespace hvd::launcher {

ElasticAgents::ElasticAgents(AgentLinkFactory connect, AgentSession::Options options,
                             std::chrono::steady_clock::duration connect_timeout)
    : connect_(std::move(connect)), options_(std::move(options)), timeout_(connect_timeout) {}

ElasticAgents::~ElasticAgents() {
  SessionMap sessions;
  std::vector<Thread> threads;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [host, session] : sessions_) session->Close();  // all agents stop at once
    sessions.swap(sessions_);
  }
  sessions.clear();  // waits for each agent to report and end
  {
    std::lock_guard<std::mutex> lock(mu_);
    threads.swap(threads_);
  }
  for (Thread& t : threads) t.thread.join();  // connections under way, sessions being closed
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.clear();  // sessions a connection thread added meanwhile
  if (event_fd_ >= 0) ::close(event_fd_);
}

Status ElasticAgents::Init() {
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) return Status::IoError(std::string("eventfd: ") + strerror(errno));
  return Status::OK();
}

void ElasticAgents::StartThread(std::function<void()> body) {
  auto done = std::make_shared<std::atomic<bool>>(false);
  threads_.push_back({std::thread([body = std::move(body), done] {
                        body();
                        done->store(true);
                      }),
                      done});
}

void ElasticAgents::JoinFinishedLocked() {
  for (auto it = threads_.begin(); it != threads_.end();) {
    if (!it->done->load()) {
      ++it;
      continue;
    }
    it->thread.join();
    it = threads_.erase(it);
  }
}

// Closing a session waits for its agent to report (up to the grace period and some) and then
// for its link to let go: never on the event loop's thread.
void ElasticAgents::RetireLocked(SessionMap::iterator it) {
  std::shared_ptr<AgentSession> session(std::move(it->second));
  sessions_.erase(it);
  session->Close();
  StartThread([session = std::move(session)]() mutable { session.reset(); });
}

void ElasticAgents::DropIfEndedLocked(const std::string& host) {
  auto it = sessions_.find(host);
  if (it != sessions_.end() && it->second->ended()) RetireLocked(it);
}

void ElasticAgents::Connect(const std::string& host) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    JoinFinishedLocked();
    DropIfEndedLocked(host);
    released_while_connecting_.erase(host);
    if (sessions_.count(host) > 0 || !connecting_.insert(host).second) return;
    StartThread([this, host] { ConnectThread(host); });
  }
}

void ElasticAgents::ConnectThread(const std::string& host) {
  const auto deadline = std::chrono::steady_clock::now() + timeout_;
  Status status = Status::OK();
  std::unique_ptr<AgentSession> session;
  Result<std::unique_ptr<AgentLink>> link = connect_(host, deadline);
  if (link.ok()) {
    AgentSession::Options options = options_;
    options.host = host;
    Result<std::unique_ptr<AgentSession>> opened =
        AgentSession::Open(std::move(*link), options, deadline);
    if (opened.ok()) {
      session = std::move(*opened);
    } else {
      status = opened.status();
    }
  } else {
    status = link.status();
  }
  std::unique_ptr<AgentSession> unwanted;  // closed on this thread, outside the lock
  {
    std::lock_guard<std::mutex> lock(mu_);
    connecting_.erase(host);
    if (released_while_connecting_.erase(host) > 0 && session) {
      unwanted = std::move(session);
      status = Status::Aborted("host " + host + " left the job while hvdrun connected to it");
    }
    if (session) sessions_[host] = std::move(session);
    finished_.emplace_back(host, status);
  }
  uint64_t one = 1;
  ssize_t ignored = ::write(event_fd_, &one, sizeof(one));
  (void)ignored;
}

std::vector<std::pair<std::string, Status>> ElasticAgents::TakeFinished() {
  uint64_t count;
  ssize_t ignored = ::read(event_fd_, &count, sizeof(count));
  (void)ignored;
  std::lock_guard<std::mutex> lock(mu_);
  return std::exchange(finished_, {});
}

AgentSession* ElasticAgents::session(const std::string& host) {
  std::lock_guard<std::mutex> lock(mu_);
  DropIfEndedLocked(host);
  auto it = sessions_.find(host);
  return it == sessions_.end() ? nullptr : it->second.get();
}

void ElasticAgents::DropIfEnded(const std::string& host) {
  std::lock_guard<std::mutex> lock(mu_);
  DropIfEndedLocked(host);
}

void ElasticAgents::Release(const std::string& host) {
  std::lock_guard<std::mutex> lock(mu_);
  JoinFinishedLocked();
  auto it = sessions_.find(host);
  if (it != sessions_.end()) RetireLocked(it);
  if (connecting_.count(host) > 0) released_while_connecting_.insert(host);
}

}  // namespace hvd::launcher
