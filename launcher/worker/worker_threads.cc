#include "launcher/worker/worker_threads.h"

#include <algorithm>

namespace hvd::launcher {

const char kWorkerThreadsVar[] = "HVD_WORKER_THREADS";

Status CheckWorkerThreadsPolicy(const std::string& policy, const std::string& source) {
  if (policy == "share" || policy == "system") return Status::OK();
  return Status::InvalidArgument(source + ": expected share or system, got '" + policy + "'");
}

void ShareWorkerThreads(std::map<std::string, std::string>& env, int cpus, int ranks_here) {
  auto policy = env.find(kWorkerThreadsVar);
  if (policy == env.end() || policy->second != "share") return;
  if (cpus <= 0 || ranks_here <= 0 || env.count("OMP_NUM_THREADS") > 0) return;
  env["OMP_NUM_THREADS"] = std::to_string(std::max(1, cpus / ranks_here));
}

}  // namespace hvd::launcher
