#include "launcher/elastic/elastic_agents.h"

#include <errno.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cstdint>

namespace hvd::launcher {

ElasticAgents::ElasticAgents(AgentLinkFactory connect, AgentSession::Options options,
                             std::chrono::steady_clock::duration connect_timeout)
    : connect_(std::move(connect)), options_(std::move(options)), timeout_(connect_timeout) {}

ElasticAgents::~ElasticAgents() {
  std::map<std::string, std::unique_ptr<AgentSession>> sessions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [host, session] : sessions_) session->Close();  // all agents stop at once
    sessions.swap(sessions_);
  }
  sessions.clear();  // waits for each agent to report and end
  for (std::thread& t : threads_) t.join();
  std::lock_guard<std::mutex> lock(mu_);
  sessions_.clear();  // sessions a connection thread added meanwhile
  if (event_fd_ >= 0) ::close(event_fd_);
}

Status ElasticAgents::Init() {
  event_fd_ = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) return Status::IoError(std::string("eventfd: ") + strerror(errno));
  return Status::OK();
}

void ElasticAgents::Connect(const std::string& host) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (sessions_.count(host) > 0 || !connecting_.insert(host).second) return;
  }
  threads_.emplace_back([this, host] {
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
    {
      std::lock_guard<std::mutex> lock(mu_);
      connecting_.erase(host);
      if (session) sessions_[host] = std::move(session);
      finished_.emplace_back(host, status);
    }
    uint64_t one = 1;
    ssize_t ignored = ::write(event_fd_, &one, sizeof(one));
    (void)ignored;
  });
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
  auto it = sessions_.find(host);
  return it == sessions_.end() ? nullptr : it->second.get();
}

}  // namespace hvd::launcher
