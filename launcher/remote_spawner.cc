#include "launcher/remote_spawner.h"

#include <chrono>
#include <utility>

namespace hvd::launcher {
namespace {

// RankHandle over a RemoteProcess.
class RemoteRankHandle : public RankHandle {
 public:
  explicit RemoteRankHandle(std::unique_ptr<RemoteProcess> process)
      : process_(std::move(process)) {}
  int exit_event_fd() const override { return process_->exit_event_fd(); }
  std::optional<int> TryWait() override { return process_->TryWait(); }
  void Signal(int signo) override { (void)process_->Signal(signo); }
  void Close() override { process_->Close(); }
  std::string TransportError() const override {
    Status status = process_->transport_status();
    return status.ok() ? "" : status.message();
  }

 private:
  std::unique_ptr<RemoteProcess> process_;
};

}  // namespace

RemoteSpawner::~RemoteSpawner() {
  for (auto& [rank, future] : pending_) {
    if (!future.valid()) continue;
    Started started = future.get();
    if (started.ok()) (*started)->Close();  // destroyed here: waits for the agent to end
  }
}

std::string RemoteSpawner::RemoteCommand(const std::string& agent_path) {
  return "exec " + ShellQuote(agent_path);
}

void RemoteSpawner::Prepare(const std::vector<SpawnRequest>& requests,
                            std::chrono::steady_clock::time_point deadline) {
  for (const SpawnRequest& request : requests) {
    if (!request.remote) continue;
    RemoteRankRequest remote;
    remote.argv = request.argv;
    remote.env = request.env;
    remote.cwd = options_.cwd;
    remote.job_key = options_.job_key;
    remote.grace_period_s = options_.grace_period_s;
    remote.agent_path = options_.agent_path;
    SshTarget target{request.host, options_.ssh};
    pending_[request.rank] = std::async(std::launch::async, [target, remote, deadline] {
      return StartRemoteRank(target, remote, deadline);
    });
  }
}

Result<SpawnedRank> RemoteSpawner::Spawn(const SpawnRequest& request) {
  if (!request.remote) return local_.Spawn(request);
  auto it = pending_.find(request.rank);
  if (it == pending_.end() || !it->second.valid()) {
    return Status::Internal("rank " + std::to_string(request.rank) + " was not prepared");
  }
  Started started = it->second.get();
  if (!started.ok()) return started.status();
  std::unique_ptr<RemoteProcess> process = std::move(*started);
  SpawnedRank spawned;
  auto [out, err] = process->ReleaseOutputFds();
  spawned.stdout_fd = out;
  spawned.stderr_fd = err;
  spawned.handle = std::make_unique<RemoteRankHandle>(std::move(process));
  return spawned;
}

}  // namespace hvd::launcher
