#ifndef HVD_LAUNCHER_EXEC_SEARCH_H_
#define HVD_LAUNCHER_EXEC_SEARCH_H_

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

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_EXEC_SEARCH_H_
