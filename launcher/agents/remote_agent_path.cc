#include "launcher/agents/remote_agent_path.h"

#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "launcher/agents/agent_protocol.h"

namespace hvd::launcher {

std::optional<std::string> FindAgentBinary(const std::string& exe_path) {
  if (exe_path.empty()) return std::nullopt;
  std::filesystem::path dir = std::filesystem::path(exe_path).parent_path();
  for (const char* relative : {"hvd-agent", "../agent/hvd-agent"}) {
    std::error_code ec;
    std::filesystem::path candidate = dir / relative;
    if (!std::filesystem::is_regular_file(candidate, ec)) continue;
    std::filesystem::path canonical = std::filesystem::canonical(candidate, ec);
    if (!ec && ::access(canonical.c_str(), X_OK) == 0) return canonical.string();
  }
  return std::nullopt;
}

std::string AgentVersionLine() {
  return std::string("hvd-agent ") + HVD_VERSION + " (protocol " +
         std::to_string(kAgentProtocolVersion) + ")";
}

}  // namespace hvd::launcher
