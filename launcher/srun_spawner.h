#ifndef HVD_LAUNCHER_SRUN_SPAWNER_H_
#define HVD_LAUNCHER_SRUN_SPAWNER_H_

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/job_key.h"
#include "launcher/local_spawner.h"
#include "launcher/srun_command.h"

namespace hvd::launcher {

// Starts local ranks with a LocalSpawner and remote ones (SpawnRequest::remote) as Slurm job
// steps: one `srun ... hvd-agent` child per rank (SrunRankArgv), whose stdin carries the
// hvd-agent protocol (launcher/remote_protocol.h): the start frame (argv, environment,
// working directory, job key) and later Signal frames. Nothing about the rank is on srun's
// command line or in its environment; srun relays its stdin to the agent over Slurm's I/O
// connection.
//
// srun runs in its own process group, so a Ctrl-C at the terminal reaches only hvdrun, and
// without a parent-death signal: when hvdrun dies, even by SIGKILL, srun's stdin reaches end
// of file, srun forwards it, and the agent terminates the rank (SIGTERM, grace, SIGKILL) -
// killing srun instead would leave the step running. Its output pipes are the rank's; its
// exit status is the rank's (srun reports a rank killed by signal N as exit code 128+N).
//
// Signals to a remote rank become Signal frames; SIGKILL (the end of the grace period) also
// closes srun's stdin and, should srun still run kSrunStopAfter later (a step that never
// started, a lost node), cancels the step by sending srun SIGTERM, then SIGKILL.
//
// Threading: used from job control's thread (the LocalSpawner contract).
class SrunSpawner : public RankSpawner {
 public:
  struct Options {
    SrunLaunch launch;
    std::string agent_path;  // absolute, the same on every node
    std::string cwd;         // the ranks' working directory ("" = srun's default)
    std::optional<control::JobKey> job_key;
    double grace_period_s = 5;
    // srun's own environment (hvdrun's): srun needs SLURM_* and, in tests, SLURM_CONF.
    std::map<std::string, std::string> srun_env;
    bool verbose = false;
  };
  static constexpr std::chrono::seconds kSrunStopAfter{10};

  explicit SrunSpawner(Options options) : options_(std::move(options)) {}

  void Prepare(const std::vector<SpawnRequest>& requests,
               std::chrono::steady_clock::time_point deadline) override;
  Result<SpawnedRank> Spawn(const SpawnRequest& request) override;

 private:
  Options options_;
  LocalSpawner local_;
  std::chrono::steady_clock::time_point deadline_ = std::chrono::steady_clock::now();
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_SRUN_SPAWNER_H_
