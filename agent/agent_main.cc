// hvd-agent: the remote half of hvdrun's multi-host launch, one per host. hvdrun runs it as
// the command of one SSH session (or the task of one srun step) and speaks the protocol of
// launcher/agent_protocol.h on its stdin and stdout; see agent/agent.h.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "agent/agent.h"
#include "common/env_registry.h"
#include "launcher/remote_agent_path.h"

namespace {

void SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s\n", hvd::launcher::AgentVersionLine().c_str());
    return 0;
  }
  if (argc > 1) {
    std::fprintf(stderr,
                 "usage: %s [--version]\n  Started by hvdrun over SSH or srun; speaks "
                 "launcher/agent_protocol.h on stdin and stdout. Not meant to be run by hand.\n",
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
