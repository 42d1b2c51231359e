#include "launcher/preflight.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>

#include "launcher/agents/remote_agent_path.h"
#include "launcher/agents/ssh_agent_link.h"
#include "launcher/multi_host.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/preflight_answers.h"
#include "launcher/ssh/ssh_session.h"

namespace hvd::launcher {
namespace {

using Clock = std::chrono::steady_clock;

// Runs `command` on the session's host; returns the end of its stdout (KeepTail: a host that
// prints without end costs at most kMaxRemoteOutput until the deadline). Errors name the host.
Result<std::string> RunRemote(SshSession& session, const std::string& command,
                              Clock::time_point deadline) {
  HVD_ASSIGN_OR_RETURN(LIBSSH2_CHANNEL * channel, session.Exec(command, deadline));
  std::string out;
  char buf[4096];
  Status status;
  while (true) {
    ssize_t n = libssh2_channel_read(channel, buf, sizeof(buf));
    if (n > 0) {
      KeepTail(&out, std::string_view(buf, static_cast<size_t>(n)));
    } else if (n == LIBSSH2_ERROR_EAGAIN) {
      status = session.WaitSocket(deadline, "running '" + command + "'");
      if (!status.ok()) break;
    } else if (n == 0 && libssh2_channel_eof(channel)) {
      break;
    } else if (n < 0) {
      status = Status::IoError("ssh to " + session.where() + ": " + session.LastError());
      break;
    }
  }
  while (status.ok() && libssh2_channel_close(channel) == LIBSSH2_ERROR_EAGAIN) {
    status = session.WaitSocket(deadline, "closing the channel");
  }
  int exit_code = libssh2_channel_get_exit_status(channel);
  libssh2_channel_free(channel);
  HVD_RETURN_IF_ERROR(status);
  if (exit_code != 0) {
    return Status::RemoteError("'" + command + "' on " + session.target().host + " exited " +
                               std::to_string(exit_code) +
                               (exit_code == 127 ? " (not found)" : ""));
  }
  return out;
}

// A column's value that is a failure ("error: ...").
bool IsError(const std::string& value) { return value.rfind("error", 0) == 0; }

// Listens on a free port of `address`, as the rendezvous server would; the remote hosts'
// probes connect to it (the kernel completes their connections from the backlog) while it
// stays open. *port is 0 when listening failed.
std::string PortCheck(const std::string& address, int* fd, int* port) {
  *port = 0;
  *fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
  socklen_t len = sizeof(addr);
  bool ok = *fd >= 0 && ::bind(*fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            ::listen(*fd, 128) == 0 &&
            ::getsockname(*fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  if (!ok) return "error: cannot listen on " + address;
  *port = ntohs(addr.sin_port);
  return "ok (" + std::to_string(*port) + ")";
}

// On the remote host: `hvd-agent --probe ADDRESS PORT [INTERFACE]` (agent_main.cc).
void ProbeFromRemote(SshSession& session, const std::string& agent_path, const std::string& address,
                     int port, const std::string& iface, Clock::time_point deadline,
                     HostCheck& check) {
  if (port == 0) {
    check.reach = "-";
    return;
  }
  std::string command =
      ShellQuote(agent_path) + " --probe " + ShellQuote(address) + " " + std::to_string(port);
  if (!iface.empty()) command += " " + ShellQuote(iface);
  // Its answers are on stdout, also when it exits 1; only a failure to run it has none.
  Result<std::string> out = RunRemote(session, command + "; exit 0", deadline);
  if (!out.ok()) {
    check.reach = "error: " + out.status().message();
    return;
  }
  const ProbeAnswer answer = ReadProbeAnswer(*out);
  if (answer.interface && !IsError(check.interface)) {
    check.interface = *answer.interface + " (on " + check.host + ")";
  }
  if (!answer.reach) {
    check.reach = "error: no answer from '" + command + "'";
  } else {
    check.reach =
        answer.reach->starts_with("ok") ? "ok" : *answer.reach + " (from " + check.host + ")";
  }
}

void CheckRemote(const SshOptions& ssh, const std::string& agent_path, const std::string& address,
                 int port, const std::string& iface, Clock::time_point deadline, HostCheck& check) {
  auto start = Clock::now();
  Result<std::unique_ptr<SshSession>> session = SshSession::Connect({check.host, ssh}, deadline);
  if (!session.ok()) {
    check.ssh = "error: " + session.status().message();
    check.agent = "-";
    return;
  }
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start).count();
  check.ssh = "ok (" + std::to_string(ms) + " ms)";
  Result<std::string> version =
      RunRemote(**session, "exec " + ShellQuote(agent_path) + " --version", deadline);
  if (!version.ok()) {
    check.agent = "error: " + version.status().message();
    return;
  }
  // Its last line: a login script may print before it (a banner, an echo in ~/.bashrc).
  check.agent = VersionAnswer(*version);
  if (check.agent != AgentVersionLine()) {
    check.agent = "error: " + check.agent + " differs from " + AgentVersionLine();
    return;
  }
  ProbeFromRemote(**session, agent_path, address, port, iface, deadline, check);
}

}  // namespace

std::vector<HostCheck> RunPreflight(const LaunchSpec& spec, const env::Environment& env,
                                    const JobPlan& plan) {
  std::vector<HostCheck> checks;
  for (const discovery::RankInfo& rank : plan.ranks) {
    if (!checks.empty() && checks.back().host == rank.host) continue;
    checks.push_back({rank.host, plan.IsRemote(rank.host), "local", "", "", "", "local", false});
  }
  Result<std::string> agent = LocalAgentPath();
  std::string address = "127.0.0.1";
  std::string interface = "lo 127.0.0.1";
  if (!plan.remote_hosts.empty() || !spec.network_interfaces.empty()) {
    Result<NetworkChoice> network = ChooseNetwork(plan.remote_hosts, spec.network_interfaces);
    interface = network.ok() ? network->interface.name + " " + network->interface.address
                             : "error: " + network.status().message();
    if (network.ok()) address = network->interface.address;
  }
  int listener = -1;
  int port_number = 0;
  std::string port = PortCheck(address, &listener, &port_number);
  const std::string iface = spec.network_interfaces.empty() ? "" : spec.network_interfaces[0];
  auto deadline =
      Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(spec.start_timeout_s * 1000));
  SshOptions ssh = SshOptionsFor(spec, env);
  std::vector<std::thread> threads;
  for (HostCheck& check : checks) {
    check.interface = interface;
    check.port = port;
    if (!agent.ok()) {
      check.agent = "error: " + agent.status().message();
    } else if (!check.remote) {
      check.agent = AgentVersionLine();
    } else {
      check.reach = "-";
      threads.emplace_back([&, path = *agent] {
        CheckRemote(ssh, path, address, port_number, iface, deadline, check);
      });
    }
  }
  for (std::thread& thread : threads) thread.join();
  if (listener >= 0) ::close(listener);
  for (HostCheck& check : checks) {
    check.ok = !IsError(check.ssh) && !IsError(check.agent) && check.agent != "-" &&
               !IsError(check.interface) && !IsError(check.port) && !IsError(check.reach);
  }
  return checks;
}

std::string FormatPreflight(const std::vector<HostCheck>& checks) {
  size_t width = 6;
  for (const HostCheck& check : checks) width = std::max(width, check.host.size() + 2);
  auto pad = [](std::string text, size_t w) {
    return text.size() < w ? text + std::string(w - text.size(), ' ') : text + " ";
  };
  std::string text = pad("host", width) + pad("ssh", 20) + pad("hvd-agent", 32) +
                     pad("interface", 22) + pad("port", 14) + pad("reaches hvdrun", 16) +
                     "status\n";
  std::vector<std::string> failing;
  for (const HostCheck& check : checks) {
    text += pad(check.host, width) + pad(check.ssh, 20) + pad(check.agent, 32) +
            pad(check.interface, 22) + pad(check.port, 14) + pad(check.reach, 16) +
            (check.ok ? "OK" : "FAILED") + "\n";
    if (!check.ok) failing.push_back(check.host);
  }
  if (failing.empty()) return text + "all " + std::to_string(checks.size()) + " hosts OK\n";
  std::string names;
  for (const std::string& host : failing) names += (names.empty() ? "" : ", ") + host;
  return text + "FAILED: " + names + "\n";
}

int RunCheckMode(const LaunchSpec& spec, const env::Environment& env, const JobPlan& plan) {
  std::vector<HostCheck> checks = RunPreflight(spec, env, plan);
  std::string text = FormatPreflight(checks);
  std::fwrite(text.data(), 1, text.size(), stdout);
  std::fflush(stdout);
  bool ok = std::all_of(checks.begin(), checks.end(), [](const HostCheck& c) { return c.ok; });
  return ok ? kExitOk : kExitLaunchFailed;
}

}  // namespace hvd::launcher
