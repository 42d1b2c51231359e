#include "agent/rank_launch.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <charconv>
#include <optional>
#include <utility>

#include "launcher/local/child_process.h"
#include "launcher/rendezvous/network_interface.h"
#include "launcher/worker/cpu_binding.h"
#include "launcher/worker/worker_threads.h"

namespace hvd::agent {
namespace {

std::string Errno(int err) { return strerror(err); }

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
  env.emplace("GLOO_SOCKET_IFNAME", nic->name);  // torch.distributed's Gloo
}

}  // namespace

std::map<std::string, std::string> MergeEnvironment(
    const std::map<std::string, std::string>& agent_env,
    const std::map<std::string, std::string>& request_env, int key_fd) {
  std::map<std::string, std::string> env = agent_env;
  for (const auto& [name, value] : request_env) env[name] = value;
  FillInterface(env);
  // This host's share of its cores for each of the job's ranks here (HVD_WORKER_THREADS=share);
  // an OMP_NUM_THREADS of the login environment's or hvdrun's wins.
  int ranks_here = 0;
  if (auto local_size = env.find("HVD_LOCAL_SIZE"); local_size != env.end()) {
    std::from_chars(local_size->second.data(),
                    local_size->second.data() + local_size->second.size(), ranks_here);
  }
  launcher::ShareWorkerThreads(env, launcher::PhysicalCores(launcher::AllowedCpus()), ranks_here);
  env.erase("HVD_SECRET_FD");
  if (key_fd >= 0) env["HVD_SECRET_FD"] = std::to_string(key_fd);
  return env;
}

LaunchOutcome LaunchRank(const launcher::AgentStart& request,
                         const std::map<std::string, std::string>& agent_env, int key_fd) {
  // The rank leads a new session and gets SIGKILL when the agent dies. The agent ignores
  // SIGPIPE and blocks the signals it reads from a signalfd; the rank starts with SIGPIPE at
  // its default and an empty mask.
  const std::map<std::string, std::string> env = MergeEnvironment(agent_env, request.env, key_fd);
  launcher::ChildPlan plan(request.argv, env);
  plan.group = launcher::ChildPlan::Group::kNewSession;
  plan.default_sigpipe = true;
  auto cpus = launcher::RankCpuSet(env, launcher::AllowedCpus());
  if (!cpus.ok()) return Failure(kExitAgentError, cpus.status().message());
  plan.cpus = *cpus;

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
  const pid_t agent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    CloseAll({out[0], out[1], err[0], err[1], exec_pipe[0], exec_pipe[1], null_in});
    return Failure(kExitAgentError, "fork failed: " + Errno(e));
  }
  if (pid == 0) launcher::RunChild(plan, agent);
  CloseAll({out[1], err[1], exec_pipe[1], null_in});

  const std::optional<int> error = launcher::ReadExecError(exec_pipe[0]);
  ::close(exec_pipe[0]);
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  if (error) {
    // The child has already exited 126/127; the caller still reaps it via SIGCHLD, but the
    // rank never ran, so report the failure instead.
    CloseAll({out[0], err[0]});
    return Failure(*error == ENOENT || *error == ENOTDIR ? kExitNotFound : kExitNotExecutable,
                   launcher::ExecErrorMessage(request.argv[0], *error));
  }
  return LaunchedRank{pid, out[0], err[0]};
}

}  // namespace hvd::agent
