#ifndef HVD_TEST_CLUSTER_CLUSTER_ENV_H_
#define HVD_TEST_CLUSTER_CLUSTER_ENV_H_

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "launcher/local/rank_spawner.h"
#include "launcher/ssh/ssh_options.h"

namespace hvd::test {

// What scripts/cluster/up.sh wrote to $HVD_CLUSTER_STATE/cluster.env, plus the hvd-agent
// path the test was built with (HVD_AGENT_PATH). nullopt when no cluster is up.
struct ClusterEnv {
  std::string state_dir;
  std::vector<std::string> hosts;
  std::vector<std::string> addrs;
  std::string key;
  std::string known_hosts;
  std::string agent_path;

  static std::optional<ClusterEnv> Load();
  // Strict known_hosts, the cluster's key, 5 s connect timeout, one attempt.
  launcher::SshTarget Target(const std::string& host) const;
};

// Output and exit status of one remote rank, read until both streams end and its exit event
// fires (bounded); closes the rank's pipes.
struct RankResult {
  std::string out;
  std::string err;
  int wait_status = -1;
  std::string transport_error;
};
RankResult CollectRank(launcher::SpawnedRank& rank, std::chrono::seconds limit);

// Reads one line from the rank's stdout (bounded); "" at EOF or timeout.
std::string ReadLine(int fd, std::chrono::seconds limit);

// Processes on this machine whose command line contains `needle` (all namespaces share the
// pid namespace, so this sees the remote hosts' processes too).
std::vector<int> PidsWithCmdline(const std::string& needle);
// `ip netns pids <ns>`.
std::vector<int> NetnsPids(const std::string& ns);
std::string ReadFile(const std::string& path);

}  // namespace hvd::test

#endif  // HVD_TEST_CLUSTER_CLUSTER_ENV_H_
