#include "runtime/transports/host_layout.h"

#include <unistd.h>

#include <algorithm>
#include <fstream>

namespace hvd::runtime {

HostLayout ComputeHostLayout(const std::vector<std::string>& host_of, int me) {
  HostLayout l;
  std::vector<std::string> names;  // distinct hosts in order of first appearance
  std::vector<int> host_index(host_of.size());
  std::vector<int> counts;
  for (size_t i = 0; i < host_of.size(); ++i) {
    auto it = std::find(names.begin(), names.end(), host_of[i]);
    if (it == names.end()) {
      names.push_back(host_of[i]);
      counts.push_back(0);
      it = names.end() - 1;
    }
    host_index[i] = static_cast<int>(it - names.begin());
    ++counts[host_index[i]];
  }
  l.hosts = static_cast<int>(names.size());
  l.host_index = host_index[me];
  l.local_size = counts[l.host_index];
  for (size_t i = 0; i < host_of.size(); ++i) {
    if (host_index[i] == l.host_index) {
      if (static_cast<int>(i) == me) l.local_rank = static_cast<int>(l.local_members.size());
      l.local_members.push_back(static_cast<int32_t>(i));
    }
  }
  l.uniform = true;
  for (size_t i = 0; i < host_of.size(); ++i) {
    l.uniform = l.uniform && counts[host_index[i]] == l.local_size &&
                host_index[i] == static_cast<int>(i) / l.local_size;
  }
  if (l.uniform) {
    for (int h = 0; h < l.hosts; ++h) l.cross_members.push_back(h * l.local_size + l.local_rank);
  }
  for (size_t h = 0; h < names.size(); ++h) {
    l.summary += (h == 0 ? "" : ", ") + names[h] + " x" + std::to_string(counts[h]);
  }
  return l;
}

bool CpuPerRank(int ranks_on_host) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  return cpus > 0 && ranks_on_host <= cpus;
}

int RanksPerCpu(int ranks_on_host) {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus <= 0 || ranks_on_host <= cpus) return 1;
  return static_cast<int>((ranks_on_host + cpus - 1) / cpus);
}

std::string MachineId() {
  // Fixed for the life of the process: read once, not at every group's creation.
  static const std::string id = [] {
    std::ifstream in("/proc/sys/kernel/random/boot_id");
    std::string boot_id;
    if (!(in >> boot_id)) return std::string();
    return boot_id;
  }();
  return id;
}

int CountSameMachine(const std::vector<std::string>& machine_of, int me) {
  if (machine_of[me].empty()) return 1;
  return static_cast<int>(std::count(machine_of.begin(), machine_of.end(), machine_of[me]));
}

}  // namespace hvd::runtime
