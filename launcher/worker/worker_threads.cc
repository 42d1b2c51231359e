#include "launcher/worker/worker_threads.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <utility>

namespace hvd::launcher {

const char kWorkerThreadsVar[] = "HVD_WORKER_THREADS";

Status CheckWorkerThreadsPolicy(const std::string& policy, const std::string& source) {
  if (policy == "share" || policy == "system") return Status::OK();
  return Status::InvalidArgument(source + ": expected share or system, got '" + policy + "'");
}

void ShareWorkerThreads(std::map<std::string, std::string>& env, int cores, int ranks_here) {
  auto policy = env.find(kWorkerThreadsVar);
  if (policy == env.end() || policy->second != "share") return;
  if (cores <= 0 || ranks_here <= 0 || env.count("OMP_NUM_THREADS") > 0) return;
  env["OMP_NUM_THREADS"] = std::to_string(std::max(1, cores / ranks_here));
}

int PhysicalCores(const std::vector<int>& cpus, const std::string& sysfs) {
  std::set<std::pair<std::string, std::string>> cores;
  int unknown = 0;
  auto read = [&](int cpu, const char* name) {
    std::ifstream file(sysfs + "/cpu" + std::to_string(cpu) + "/topology/" + name);
    std::string value;
    return file >> value ? value : std::string();
  };
  for (int cpu : cpus) {
    std::string package = read(cpu, "physical_package_id");
    std::string core = read(cpu, "core_id");
    if (package.empty() || core.empty()) {
      ++unknown;
    } else {
      cores.emplace(package, core);
    }
  }
  return static_cast<int>(cores.size()) + unknown;
}

}  // namespace hvd::launcher
