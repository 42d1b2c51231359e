#include "launcher/worker/worker_malloc.h"

namespace hvd::launcher {

const char kWorkerMallocVar[] = "HVD_WORKER_MALLOC";

namespace {

constexpr const char* kUserVars[] = {"MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_",
                                     "MALLOC_TOP_PAD_", "MALLOC_MMAP_MAX_"};
constexpr const char* kOtherAllocators[] = {"jemalloc", "tcmalloc", "mimalloc"};

}  // namespace

std::string UserAllocatorSetting(const std::map<std::string, std::string>& env) {
  for (const char* name : kUserVars) {
    if (env.count(name) != 0) return std::string(name) + " is set";
  }
  if (auto it = env.find("GLIBC_TUNABLES");
      it != env.end() && it->second.find("glibc.malloc.") != std::string::npos) {
    return "GLIBC_TUNABLES sets glibc.malloc tunables";
  }
  if (auto it = env.find("LD_PRELOAD"); it != env.end()) {
    for (const char* allocator : kOtherAllocators) {
      if (it->second.find(allocator) != std::string::npos) {
        return "LD_PRELOAD loads " + std::string(allocator);
      }
    }
  }
  return "";
}

Result<std::map<std::string, std::string>> WorkerMallocVars(
    const std::string& policy, const std::string& source,
    const std::map<std::string, std::string>& env) {
  if (policy == "system") return std::map<std::string, std::string>{};
  if (policy != "tuned") {
    return Status::InvalidArgument(source + ": expected tuned or system, got '" + policy + "'");
  }
  if (!UserAllocatorSetting(env).empty()) return std::map<std::string, std::string>{};
  return std::map<std::string, std::string>{
      {"MALLOC_MMAP_THRESHOLD_", std::to_string(32u << 20)},
      {"MALLOC_TRIM_THRESHOLD_", std::to_string(1u << 30)},
  };
}

}  // namespace hvd::launcher
