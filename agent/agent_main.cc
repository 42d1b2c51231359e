// hvd-agent: the remote half of hvdrun's multi-host launch, one per host. hvdrun runs it as
// the command of one SSH session (or the task of one srun step) and speaks the protocol of
// launcher/agents/agent_protocol.h on its stdin and stdout; see agent/agent.h.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>

#include "agent/agent.h"
#include "common/deadline_socket.h"
#include "common/env_registry.h"
#include "launcher/agents/remote_agent_path.h"
#include "launcher/rendezvous/network_interface.h"

namespace {

// Makes the agent's `fd` non-blocking without changing it for anyone else. O_NONBLOCK belongs
// to the open file description, and a remote login's background jobs (a ~/.bashrc's `tool &`)
// share the agent's stdout and stderr descriptions: set there, their writes failed with EAGAIN
// whenever the pipe was full, and their output was cut short (until 2026-12-02). A pipe
// reopened through /proc is a description of the agent's own. Anything else (a socket) is
// switched in place, which is all that can be done for it.
void SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) return;
  struct stat st;
  if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode)) {
    std::string path = "/proc/self/fd/" + std::to_string(fd);
    int own = ::open(path.c_str(), (flags & O_ACCMODE) | O_NONBLOCK);
    if (own >= 0) {
      int moved = ::dup2(own, fd);
      ::close(own);
      if (moved == fd) return;
    }
  }
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// hvdrun --check's remote half: can this host reach hvdrun's address at `port`, and has it
// the interface (--network-interface) the ranks would bind? Prints one line per answer;
// exits 0 when every answer is yes.
int Probe(const std::string& address, const std::string& port, const std::string& iface) {
  bool ok = true;
  if (!iface.empty()) {
    auto found = hvd::launcher::FindInterface(iface);
    if (found.ok()) {
      std::printf("interface %s %s\n", found->name.c_str(), found->address.c_str());
    } else {
      std::printf("interface error: %s\n", found.status().message().c_str());
      ok = false;
    }
  }
  int number = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), number);
  if (ec != std::errc() || end != port.data() + port.size() || number <= 0 || number > 65535) {
    std::printf("reach error: bad port '%s'\n", port.c_str());
    return 1;
  }
  auto connected = hvd::control::DeadlineSocket::Connect(
      address, static_cast<uint16_t>(number),
      hvd::control::DeadlineSocket::Clock::now() + std::chrono::seconds(3));
  if (connected.ok()) {
    std::printf("reach ok %s:%d\n", address.c_str(), number);
  } else {
    std::printf("reach error: %s\n", connected.status().message().c_str());
    ok = false;
  }
  std::fflush(stdout);
  return ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s\n", hvd::launcher::AgentVersionLine().c_str());
    return 0;
  }
  if ((argc == 4 || argc == 5) && std::strcmp(argv[1], "--probe") == 0) {
    return Probe(argv[2], argv[3], argc == 5 ? argv[4] : "");
  }
  if (argc > 1) {
    std::fprintf(
        stderr,
        "usage: %s [--version | --probe ADDRESS PORT [INTERFACE]]\n  Started by hvdrun "
        "over SSH or srun; speaks "
        "launcher/agents/agent_protocol.h on stdin and stdout. Not meant to be run by hand.\n",
        argv[0]);
    return 2;
  }
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGCHLD, SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  ::signal(SIGPIPE, SIG_IGN);
  SetNonBlocking(1);
  SetNonBlocking(2);

  hvd::agent::Agent agent(hvd::agent::Agent::Io{}, hvd::env::Environment::FromProcess().all());
  return agent.Run();
}
