#include "launcher/agents/agent_fleet.h"

#include <algorithm>
#include <atomic>
#include <thread>

namespace hvd::launcher {
namespace {

bool Contains(const std::string& text, const char* word) {
  return text.find(word) != std::string::npos;
}

// The outcome of one host's connection.
struct Attempt {
  std::unique_ptr<AgentSession> session;
  Status status;
  bool agent_failed = false;  // connected, but the agent did not come up
};

Attempt ConnectOne(const std::string& host, const AgentLinkFactory& connect,
                   const AgentSession::Options& options,
                   std::chrono::steady_clock::time_point deadline) {
  Attempt attempt;
  Result<std::unique_ptr<AgentLink>> link = connect(host, deadline);
  if (!link.ok()) {
    attempt.status = link.status();
    return attempt;
  }
  AgentSession::Options mine = options;
  mine.host = host;
  Result<std::unique_ptr<AgentSession>> session =
      AgentSession::Open(std::move(*link), std::move(mine), deadline);
  if (!session.ok()) {
    attempt.status = session.status();
    attempt.agent_failed = true;
    return attempt;
  }
  attempt.session = std::move(*session);
  return attempt;
}

}  // namespace

std::string ConnectFailureReason(const Status& status) {
  const std::string& m = status.message();
  switch (status.code()) {
    case StatusCode::kPermissionDenied:
      return Contains(m, "HOST KEY") || Contains(m, "known_hosts") || Contains(m, " is not in ")
                 ? "host key"
                 : "auth";
    case StatusCode::kTimeout:
      return "timeout";
    case StatusCode::kInvalidArgument:
      if (Contains(m, "cannot resolve")) return "name";
      if (Contains(m, "identity file")) return "auth";
      return "error";
    case StatusCode::kIoError:
      if (Contains(m, "refused")) return "refused";
      if (Contains(m, "unreachable") || Contains(m, "No route")) return "unreachable";
      return "error";
    default:
      return "error";
  }
}

Result<std::unique_ptr<AgentFleet>> AgentFleet::Open(const std::vector<std::string>& hosts,
                                                     const AgentLinkFactory& connect,
                                                     const AgentSession::Options& options,
                                                     std::chrono::steady_clock::time_point deadline,
                                                     int max_parallel) {
  std::vector<Attempt> attempts(hosts.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < hosts.size(); i = next++) {
      attempts[i] = ConnectOne(hosts[i], connect, options, deadline);
    }
  };
  const size_t threads = std::min(hosts.size(), static_cast<size_t>(std::max(1, max_parallel)));
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (std::thread& thread : pool) thread.join();

  auto fleet = std::make_unique<AgentFleet>();
  std::string failures;
  int failed = 0;
  for (size_t i = 0; i < hosts.size(); ++i) {
    Attempt& attempt = attempts[i];
    if (attempt.session) {
      fleet->sessions_[hosts[i]] = std::move(attempt.session);
      continue;
    }
    ++failed;
    const std::string reason =
        attempt.agent_failed ? "agent" : ConnectFailureReason(attempt.status);
    failures += "\n  " + hosts[i] + ": " + reason + ": " + attempt.status.message();
  }
  if (failed > 0) {
    // All or nothing: the sessions that did open are closed by the fleet's destructor.
    return Status::IoError("cannot reach " + std::to_string(failed) + " of " +
                           std::to_string(hosts.size()) +
                           " remote hosts; nothing was started:" + failures);
  }
  return fleet;
}

AgentFleet::~AgentFleet() {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& [host, session] : sessions_) session->Close();
  sessions_.clear();  // each waits for its agent; all were closed together
}

AgentSession* AgentFleet::session(const std::string& host) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = sessions_.find(host);
  return it == sessions_.end() ? nullptr : it->second.get();
}

Status AgentFleet::Add(std::unique_ptr<AgentSession> session) {
  const std::string host = session->host();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!sessions_.emplace(host, std::move(session)).second) {
    return Status::InvalidArgument("host " + host + " already has an hvd-agent session");
  }
  return Status::OK();
}

}  // namespace hvd::launcher
