#include "launcher/local/exec_search.h"

#include <sys/stat.h>
#include <unistd.h>

namespace hvd::launcher {

std::vector<std::string> ExecCandidates(const std::string& program,
                                        const std::map<std::string, std::string>& env) {
  if (program.find('/') != std::string::npos) return {program};
  auto it = env.find("PATH");
  std::string path = it != env.end() ? it->second : "/usr/local/bin:/usr/bin:/bin";
  std::vector<std::string> out;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    std::string dir = path.substr(begin, end - begin);
    out.push_back((dir.empty() ? "." : dir) + "/" + program);
    begin = end + 1;
  }
  return out;
}

std::optional<std::string> FindExecutable(const std::string& program,
                                          const std::map<std::string, std::string>& env) {
  for (const std::string& candidate : ExecCandidates(program, env)) {
    struct stat info;
    if (::stat(candidate.c_str(), &info) == 0 && S_ISREG(info.st_mode) &&
        ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return std::nullopt;
}

}  // namespace hvd::launcher
