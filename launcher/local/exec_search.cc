#include "launcher/local/exec_search.h"

#include <errno.h>
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

[[noreturn]] void ExecFirstCandidate(const std::vector<std::string>& candidates, char* const argv[],
                                     char* const envp[], int error_fd) {
  int error = ENOENT;
  bool saw_eacces = false;
  for (const std::string& candidate : candidates) {
    ::execve(candidate.c_str(), argv, envp);
    error = errno;
    if (error == EACCES) {
      saw_eacces = true;
    } else if (error != ENOENT && error != ENOTDIR) {
      break;
    }
  }
  if (saw_eacces && (error == ENOENT || error == ENOTDIR)) error = EACCES;
  ssize_t ignored = ::write(error_fd, &error, sizeof(error));
  (void)ignored;
  ::_exit(error == ENOENT || error == ENOTDIR ? kExitNotFound : kExitNotExecutable);
}

}  // namespace hvd::launcher
