#include "launcher/agents/agent_spawner.h"

#include <unistd.h>

#include <utility>

namespace hvd::launcher {

AgentSpawner::~AgentSpawner() {
  for (auto& [rank, spawned] : prepared_) {
    if (!spawned.ok()) continue;
    for (int fd : {spawned->stdout_fd, spawned->stderr_fd}) {
      if (fd >= 0) ::close(fd);
    }
  }
}

void AgentSpawner::Prepare(const std::vector<SpawnRequest>& requests,
                           std::chrono::steady_clock::time_point deadline) {
  (void)deadline;  // starting a remote rank only queues a frame
  for (const SpawnRequest& request : requests) {
    if (!request.remote) continue;
    AgentSession* session = fleet_ != nullptr ? fleet_->session(request.host) : nullptr;
    if (session == nullptr) {
      prepared_.emplace(request.rank,
                        Status::Internal("no hvd-agent session for host " + request.host));
      continue;
    }
    prepared_.emplace(request.rank, session->StartRank(static_cast<uint32_t>(request.rank),
                                                       request.argv, request.env));
  }
}

Result<SpawnedRank> AgentSpawner::Spawn(const SpawnRequest& request) {
  if (!request.remote) return local_.Spawn(request);
  auto it = prepared_.find(request.rank);
  if (it == prepared_.end()) {
    return Status::Internal("rank " + std::to_string(request.rank) + " was not prepared");
  }
  Result<SpawnedRank> spawned = std::move(it->second);
  prepared_.erase(it);
  return spawned;
}

}  // namespace hvd::launcher
