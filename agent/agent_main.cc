// hvd-agent: the remote half of hvdrun's SSH spawner. hvdrun runs it as the SSH command and
// speaks the protocol of launcher/remote_protocol.h on its stdin; see agent/agent.h.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "agent/agent.h"
#include "agent/rank_launch.h"
#include "common/env_registry.h"
#include "launcher/remote_agent_path.h"

namespace {

void SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags >= 0) ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

// Ends the agent the way the rank ended, so sshd reports the same exit status or signal.
[[noreturn]] void ExitLike(int wait_status) {
  if (WIFSIGNALED(wait_status)) {
    int signo = WTERMSIG(wait_status);
    rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // the rank may have dumped core; the agent must not
    ::signal(signo, SIG_DFL);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, signo);
    ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
    ::raise(signo);
    ::_exit(128 + signo);
  }
  ::_exit(WIFEXITED(wait_status) ? WEXITSTATUS(wait_status) : hvd::agent::kExitAgentError);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "--version") == 0) {
    std::printf("%s\n", hvd::launcher::AgentVersionLine().c_str());
    return 0;
  }
  if (argc > 1) {
    std::fprintf(
        stderr,
        "usage: %s [--version]\n  Started by hvdrun over SSH; reads its request from stdin "
        "(launcher/remote_protocol.h). Not meant to be run by hand.\n",
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
  ExitLike(agent.Run());
}
