#include "test/support/memory_cgroup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <thread>

namespace hvd::testing {
namespace {

// This process's cgroup path in the memory hierarchy: "N:memory:/path" (v1) or "0::/path" (v2).
bool OwnCgroup(std::string* root, std::string* path) {
  std::ifstream file("/proc/self/cgroup");
  std::string line, v2;
  while (std::getline(file, line)) {
    const size_t a = line.find(':');
    const size_t b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    const std::string where = line.substr(b + 1);
    if (controllers == "memory" || controllers.find("memory,") == 0 ||
        controllers.find(",memory") != std::string::npos) {
      *root = "/sys/fs/cgroup/memory";
      *path = where;
      return true;
    }
    if (controllers.empty()) v2 = where;
  }
  if (v2.empty()) return false;
  *root = "/sys/fs/cgroup";
  *path = v2;
  return true;
}

bool Write(const std::string& file, const std::string& value) {
  std::ofstream out(file);
  out << value;
  out.flush();
  return static_cast<bool>(out);
}

bool Exists(const std::string& file) { return ::access(file.c_str(), F_OK) == 0; }

}  // namespace

std::unique_ptr<MemoryCgroup> MemoryCgroup::Create(uint64_t limit_bytes, std::string* why_not) {
  if (::geteuid() != 0) {
    *why_not = "needs root (a memory cgroup of its own)";
    return nullptr;
  }
  std::string root, path;
  if (!OwnCgroup(&root, &path)) {
    *why_not = "no memory cgroup in /proc/self/cgroup";
    return nullptr;
  }
  static std::atomic<int> serial{0};
  std::string dir = root + (path == "/" ? "" : path) + "/hvd-test-oom-" +
                    std::to_string(::getpid()) + "-" + std::to_string(serial++);
  if (::mkdir(dir.c_str(), 0755) != 0) {
    *why_not = "cannot create " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  std::unique_ptr<MemoryCgroup> cgroup(new MemoryCgroup(dir));
  const std::string limit = std::to_string(limit_bytes);
  bool limited;
  if (Exists(dir + "/memory.limit_in_bytes")) {  // v1; memsw (memory + swap) when swap counts
    limited = Write(dir + "/memory.limit_in_bytes", limit);
    if (limited && Exists(dir + "/memory.memsw.limit_in_bytes")) {
      limited = Write(dir + "/memory.memsw.limit_in_bytes", limit);
    }
  } else if (Exists(dir + "/memory.max")) {  // v2
    limited = Write(dir + "/memory.max", limit);
    if (limited && Exists(dir + "/memory.swap.max")) limited = Write(dir + "/memory.swap.max", "0");
  } else {
    *why_not = dir + " has no memory controller (cgroup v2 without +memory in its parent)";
    return nullptr;
  }
  if (!limited) {
    *why_not = "cannot set the memory limit of " + dir;
    return nullptr;
  }
  return cgroup;
}

MemoryCgroup::~MemoryCgroup() {
  // A killed process leaves its cgroup as it is reaped; bounded retries cover the last ones.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (::rmdir(dir_.c_str()) != 0 && errno == EBUSY &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace hvd::testing
