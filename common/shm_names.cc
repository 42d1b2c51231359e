#include "common/shm_names.h"

#include <dirent.h>
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>

#include "common/fnv1a.h"

namespace hvd::control {
namespace {

std::string Hex16(const std::string& text) { return fmt::format("{:016x}", Fnv1a(text)); }

// The creator pid at the end of one of this job's names; -1 when the rest is not
// "<16 hex>-<pid>".
pid_t CreatorOf(const std::string& name, size_t prefix_size) {
  const std::string rest = name.substr(prefix_size);
  if (rest.size() < 18 || rest[16] != '-') return -1;
  long pid = -1;
  const char* first = rest.data() + 17;
  const char* last = rest.data() + rest.size();
  auto [end, ec] = std::from_chars(first, last, pid);
  if (ec != std::errc() || end != last || pid <= 0) return -1;
  return static_cast<pid_t>(pid);
}

}  // namespace

std::string ShmSegmentName(const std::string& job_id, const std::string& scope, pid_t pid) {
  return "/" + ShmSegmentPrefix(job_id) + Hex16(scope) + "-" + std::to_string(pid);
}

std::string ShmSegmentPrefix(const std::string& job_id) { return "hvd-" + Hex16(job_id) + "-"; }

std::vector<std::string> RemoveOrphanShmSegments(const std::string& job_id,
                                                 const std::string& dir) {
  std::vector<std::string> removed;
  const std::string prefix = ShmSegmentPrefix(job_id);
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return removed;
  std::vector<std::string> orphans;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const pid_t creator = CreatorOf(name, prefix.size());
    if (creator > 0 && ::kill(creator, 0) != 0 && errno == ESRCH) orphans.push_back(name);
  }
  closedir(d);
  for (const std::string& name : orphans) {
    if (::unlink((dir + "/" + name).c_str()) == 0) removed.push_back(name);
  }
  return removed;
}

}  // namespace hvd::control
