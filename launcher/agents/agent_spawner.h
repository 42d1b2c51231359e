#ifndef HVD_LAUNCHER_AGENTS_AGENT_SPAWNER_H_
#define HVD_LAUNCHER_AGENTS_AGENT_SPAWNER_H_

#include <chrono>
#include <map>
#include <vector>

#include "launcher/agents/agent_fleet.h"
#include "launcher/local/local_spawner.h"

namespace hvd::launcher {

// Starts local ranks with a LocalSpawner and remote ones (SpawnRequest::remote) through the
// agent session of their host (launcher/agents/agent_session.h), whether that agent came over SSH
// or as a srun step. Prepare sends every remote rank's Start frame at once, so the agents
// fork their ranks while hvdrun forks the local ones; Spawn hands out the remote rank's
// pipes and handle. Never waits for the network.
//
// Threading: used from job control's thread (the LocalSpawner contract). `fleet` (null when
// every rank is local) must outlive the spawner.
class AgentSpawner : public RankSpawner {
 public:
  explicit AgentSpawner(AgentFleet* fleet) : fleet_(fleet) {}
  // Closes the pipes of remote ranks prepared but never handed out (the job stopped first);
  // their agent stops them when the fleet closes.
  ~AgentSpawner() override;

  void Prepare(const std::vector<SpawnRequest>& requests,
               std::chrono::steady_clock::time_point deadline) override;
  Result<SpawnedRank> Spawn(const SpawnRequest& request) override;

 private:
  AgentFleet* fleet_;
  LocalSpawner local_;
  std::map<int, Result<SpawnedRank>> prepared_;  // by rank
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_AGENTS_AGENT_SPAWNER_H_
