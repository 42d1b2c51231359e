#ifndef HVD_LAUNCHER_LOCAL_EXEC_SEARCH_H_
#define HVD_LAUNCHER_LOCAL_EXEC_SEARCH_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hvd::launcher {

// execvp's search order for `program`, computed before fork over the rank's own PATH (or
// /usr/local/bin:/usr/bin:/bin when unset) so the forked child only tries execve on each
// candidate and never allocates (ChildPlan, launcher/local/child_process.h). A program
// containing '/' is its only candidate.
std::vector<std::string> ExecCandidates(const std::string& program,
                                        const std::map<std::string, std::string>& env);

// The first of ExecCandidates(program, env) that is an executable regular file (what execvp
// would run), or nullopt.
std::optional<std::string> FindExecutable(const std::string& program,
                                          const std::map<std::string, std::string>& env);

// Exit codes of a rank whose program could not be run, as a shell reports them.
inline constexpr int kExitNotFound = 127;       // no candidate exists
inline constexpr int kExitNotExecutable = 126;  // found but cannot be executed

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_EXEC_SEARCH_H_
