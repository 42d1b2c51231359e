#ifndef HVD_LAUNCHER_REMOTE_SPAWNER_H_
#define HVD_LAUNCHER_REMOTE_SPAWNER_H_

#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/job_key.h"
#include "launcher/local_spawner.h"
#include "launcher/remote_process.h"
#include "launcher/ssh_options.h"

namespace hvd::launcher {

// Starts local ranks with a LocalSpawner and remote ones (SpawnRequest::remote) under
// hvd-agent over SSH (StartRemoteRank), every remote rank from its own thread so a job on
// many hosts starts in about one connection time. Prepare launches the remote starts; Spawn
// of a remote rank waits for its start and hands out its output pipes and a RankHandle.
//
// Threading: used from job control's thread (the LocalSpawner contract); the start threads
// touch only their own slot. The destructor waits for starts still running and closes what
// was started but never handed out.
class RemoteSpawner : public RankSpawner {
 public:
  struct Options {
    SshOptions ssh;
    std::string agent_path;  // absolute, the same on every host
    std::string cwd;         // the ranks' working directory ("" = remote login directory)
    std::optional<control::JobKey> job_key;
    double grace_period_s = 5;
  };

  explicit RemoteSpawner(Options options) : options_(std::move(options)) {}
  ~RemoteSpawner() override;

  void Prepare(const std::vector<SpawnRequest>& requests,
               std::chrono::steady_clock::time_point deadline) override;
  Result<SpawnedRank> Spawn(const SpawnRequest& request) override;

  // The remote command for `request` as --dry-run shows it (no secrets: the key and the
  // environment travel over the channel, not on the command line).
  static std::string RemoteCommand(const std::string& agent_path);

 private:
  using Started = Result<std::unique_ptr<RemoteProcess>>;

  Options options_;
  LocalSpawner local_;
  std::map<int, std::future<Started>> pending_;  // by rank
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_REMOTE_SPAWNER_H_
