#ifndef HVD_LAUNCHER_AGENTS_REMOTE_AGENT_PATH_H_
#define HVD_LAUNCHER_AGENTS_REMOTE_AGENT_PATH_H_

#include <optional>
#include <string>

namespace hvd::launcher {

// The hvd-agent that belongs to the hvdrun at `exe_path` (SelfExecutablePath()): next to it
// when installed (<prefix>/bin/hvd-agent), or in the build tree (build/agent/hvd-agent for
// build/cmd/hvdrun). Canonical absolute path; nullopt when neither exists. Remote hosts are
// expected to have hvd installed at the same path, as Horovod expects of its Python
// environment; an explicit path (the lead's HVD_AGENT_PATH / flag) overrides this.
std::optional<std::string> FindAgentBinary(const std::string& exe_path);

// "hvd-agent <version> (protocol <n>)": what `hvd-agent --version` prints and what
// `hvdrun --check` expects from every host.
std::string AgentVersionLine();

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_AGENTS_REMOTE_AGENT_PATH_H_
