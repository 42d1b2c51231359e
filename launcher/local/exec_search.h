#ifndef HVD_LAUNCHER_LOCAL_EXEC_SEARCH_H_
#define HVD_LAUNCHER_LOCAL_EXEC_SEARCH_H_

#include <map>
#include <string>
#include <vector>

namespace hvd::launcher {

// execvp's search order for `program`, computed before fork over the rank's own PATH (or
// /usr/local/bin:/usr/bin:/bin when unset) so the forked child only tries execve on each
// candidate and never allocates. A program containing '/' is its only candidate. Shared by
// the local spawner and hvd-agent.
std::vector<std::string> ExecCandidates(const std::string& program,
                                        const std::map<std::string, std::string>& env);

// Exit codes of a rank whose program could not be run, as a shell reports them.
inline constexpr int kExitNotFound = 127;       // no candidate exists
inline constexpr int kExitNotExecutable = 126;  // found but cannot be executed

// For a forked child: execve's each candidate in turn (async-signal-safe, no allocation). If
// none runs, writes the errno (EACCES when some candidate existed but was not executable) to
// `error_fd` and _exits with kExitNotFound or kExitNotExecutable.
[[noreturn]] void ExecFirstCandidate(const std::vector<std::string>& candidates, char* const argv[],
                                     char* const envp[], int error_fd);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_EXEC_SEARCH_H_
