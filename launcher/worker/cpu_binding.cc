#include "launcher/worker/cpu_binding.h"

#include <charconv>

namespace hvd::launcher {

const char kBindToVar[] = "HVD_BIND_TO";

namespace {

std::optional<int> IntVar(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  int value = 0;
  const char* end = it->second.data() + it->second.size();
  auto [ptr, ec] = std::from_chars(it->second.data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

}  // namespace

std::vector<int> AllowedCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &set)) cpus.push_back(cpu);
  }
  return cpus;
}

std::vector<int> CpuShare(const std::vector<int>& allowed, int local_rank, int local_size) {
  const int n = static_cast<int>(allowed.size());
  if (local_size <= 0 || local_rank < 0 || local_rank >= local_size || local_size > n) return {};
  const int first = local_rank * n / local_size;
  const int last = (local_rank + 1) * n / local_size;
  return std::vector<int>(allowed.begin() + first, allowed.begin() + last);
}

Result<std::optional<cpu_set_t>> RankCpuSet(const std::map<std::string, std::string>& env,
                                            const std::vector<int>& allowed,
                                            std::optional<std::pair<int, int>> machine_slot) {
  auto policy = env.find(kBindToVar);
  if (policy != env.end() && policy->second != "core" && policy->second != "none") {
    return Status::InvalidArgument(std::string(kBindToVar) + ": unknown value '" + policy->second +
                                   "' (core or none)");
  }
  if (policy == env.end() || policy->second == "none") return std::optional<cpu_set_t>();
  // The machine's ranks, not the host name's: two names of one machine each counted their own
  // local ranks, and ranks of both were pinned to the same CPUs (until 2026-12-01).
  const std::optional<int> local_rank =
      machine_slot ? std::optional<int>(machine_slot->first) : IntVar(env, "HVD_LOCAL_RANK");
  const std::optional<int> local_size =
      machine_slot ? std::optional<int>(machine_slot->second) : IntVar(env, "HVD_LOCAL_SIZE");
  if (!local_rank || !local_size) return std::optional<cpu_set_t>();
  const std::vector<int> share = CpuShare(allowed, *local_rank, *local_size);
  if (share.empty()) return std::optional<cpu_set_t>();
  cpu_set_t set;
  CPU_ZERO(&set);
  for (int cpu : share) CPU_SET(cpu, &set);
  return std::optional<cpu_set_t>(set);
}

}  // namespace hvd::launcher
