#include "agent/rank_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <optional>
#include <utility>
#include <vector>

#include "launcher/local/exec_search.h"
#include "launcher/rendezvous/network_interface.h"
#include "launcher/worker/cpu_binding.h"

namespace hvd::agent {
namespace {

std::string Errno(int err) { return strerror(err); }

// Everything the child needs, built before fork so the child does not allocate.
struct ChildPlan {
  std::vector<std::string> candidates;
  std::vector<char*> argv;
  std::vector<std::string> env_storage;
  std::vector<char*> envp;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int error_fd = -1;
  pid_t parent = 0;
  std::optional<cpu_set_t> cpus;  // bind the rank here (launcher/worker/cpu_binding.h)
};

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void RunChild(const ChildPlan& plan) {
  ::setsid();
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != plan.parent) ::_exit(1);
  // The agent ignores SIGPIPE and blocks the signals it reads from a signalfd; the rank
  // starts with default dispositions and an empty mask.
  ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (plan.cpus) ::sched_setaffinity(0, sizeof(*plan.cpus), &*plan.cpus);  // best effort
  ::dup2(plan.stdin_fd, 0);
  ::dup2(plan.stdout_fd, 1);
  ::dup2(plan.stderr_fd, 2);
  launcher::ExecFirstCandidate(plan.candidates, plan.argv.data(), plan.envp.data(), plan.error_fd);
}

// pipe2 with both ends moved above 0/1/2 (the agent's own stdio stays untouched).
bool MakePipe(int fds[2]) {
  int raw[2];
  if (::pipe2(raw, O_CLOEXEC) != 0) return false;
  for (int i = 0; i < 2; ++i) {
    fds[i] = ::fcntl(raw[i], F_DUPFD_CLOEXEC, 3);
    ::close(raw[i]);
  }
  return fds[0] >= 0 && fds[1] >= 0;
}

void CloseAll(std::initializer_list<int> fds) {
  for (int fd : fds) {
    if (fd >= 0) ::close(fd);
  }
}

LaunchFailure Failure(int code, std::string message) { return {code, std::move(message)}; }

// A multi-host job whose interfaces hvdrun did not name: this host's interface toward the
// launcher's rendezvous address (interface names differ between hosts).
void FillInterface(std::map<std::string, std::string>& env) {
  auto addr = env.find("HVD_RENDEZVOUS_ADDR");
  if (addr == env.end() || addr->second.empty() || addr->second.rfind("127.", 0) == 0) return;
  if (env.count("HVD_GLOO_IFACE") > 0 || env.count("HOROVOD_GLOO_IFACE") > 0) return;
  Result<launcher::InterfaceAddress> nic = launcher::InterfaceToward(addr->second);
  if (!nic.ok() || nic->name.empty()) return;
  env["HVD_GLOO_IFACE"] = nic->name;
  env["HOROVOD_GLOO_IFACE"] = nic->name;
  env.emplace("NCCL_SOCKET_IFNAME", nic->name);
}

}  // namespace

std::map<std::string, std::string> MergeEnvironment(
    const std::map<std::string, std::string>& agent_env,
    const std::map<std::string, std::string>& request_env, int key_fd) {
  std::map<std::string, std::string> env = agent_env;
  for (const auto& [name, value] : request_env) env[name] = value;
  FillInterface(env);
  env.erase("HVD_SECRET_FD");
  if (key_fd >= 0) env["HVD_SECRET_FD"] = std::to_string(key_fd);
  return env;
}

LaunchOutcome LaunchRank(const launcher::AgentStart& request,
                         const std::map<std::string, std::string>& agent_env, int key_fd) {
  ChildPlan plan;
  plan.candidates =
      launcher::ExecCandidates(request.argv[0], MergeEnvironment(agent_env, request.env, -1));
  for (const std::string& arg : request.argv) plan.argv.push_back(const_cast<char*>(arg.c_str()));
  plan.argv.push_back(nullptr);
  const std::map<std::string, std::string> env = MergeEnvironment(agent_env, request.env, key_fd);
  for (const auto& [name, value] : env) plan.env_storage.push_back(name + "=" + value);
  auto cpus = launcher::RankCpuSet(env, launcher::AllowedCpus());
  if (!cpus.ok()) return Failure(kExitAgentError, cpus.status().message());
  plan.cpus = *cpus;
  for (std::string& entry : plan.env_storage) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);

  int out[2] = {-1, -1}, err[2] = {-1, -1}, exec_pipe[2] = {-1, -1};
  int null_in = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  if (!MakePipe(out) || !MakePipe(err) || !MakePipe(exec_pipe) || null_in < 0) {
    int e = errno;
    CloseAll({out[0], out[1], err[0], err[1], exec_pipe[0], exec_pipe[1], null_in});
    return Failure(kExitAgentError, "cannot create pipes for the rank: " + Errno(e));
  }
  plan.stdin_fd = null_in;
  plan.stdout_fd = out[1];
  plan.stderr_fd = err[1];
  plan.error_fd = exec_pipe[1];
  plan.parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    CloseAll({out[0], out[1], err[0], err[1], exec_pipe[0], exec_pipe[1], null_in});
    return Failure(kExitAgentError, "fork failed: " + Errno(e));
  }
  if (pid == 0) RunChild(plan);
  CloseAll({out[1], err[1], exec_pipe[1], null_in});

  int error = 0;
  ssize_t n;
  do {
    n = ::read(exec_pipe[0], &error, sizeof(error));
  } while (n < 0 && errno == EINTR);
  ::close(exec_pipe[0]);
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  if (n == static_cast<ssize_t>(sizeof(error))) {
    // The child has already exited 126/127; the caller still reaps it via SIGCHLD, but the
    // rank never ran, so report the failure instead.
    CloseAll({out[0], err[0]});
    const std::string& program = request.argv[0];
    std::string message = error == ENOENT && program.find('/') == std::string::npos
                              ? "cannot execute '" + program + "': command not found in PATH"
                              : "cannot execute '" + program + "': " + Errno(error);
    return Failure(error == ENOENT || error == ENOTDIR ? kExitNotFound : kExitNotExecutable,
                   message);
  }
  return LaunchedRank{pid, out[0], err[0]};
}

}  // namespace hvd::agent
