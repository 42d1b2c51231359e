#include "launcher/mpirun_launch.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "launcher/dry_run.h"
#include "launcher/local/child_process.h"
#include "launcher/local/rank_leftovers.h"
#include "launcher/local/signal_channel.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/output/console.h"
#include "launcher/schedulers/mpirun_command.h"
#include "launcher/worker/cpu_binding.h"
#include "launcher/worker/runtime_library.h"
#include "launcher/worker/worker_env.h"
#include "launcher/worker/worker_threads.h"

namespace hvd::launcher {
namespace {

// `mpirun --version` output, "" when mpirun cannot be run.
std::string MpirunVersion() {
  FILE* pipe = ::popen("mpirun --version 2>&1", "r");
  if (pipe == nullptr) return "";
  std::string out;
  char buf[512];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), pipe)) > 0) out.append(buf, n);
  int status = ::pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) return "";
  return out;
}

// Variables that describe one rank of an hvdrun-launched job. Under mpirun the runtime takes
// its topology from Open MPI (OMPI_COMM_WORLD_*) and needs no rendezvous server or job key
// (MPI connects the ranks), so values inherited from an enclosing job must not reach the ranks.
bool IsPerRankVariable(const std::string& name) {
  static const char* const kSuffixes[] = {"RANK",       "SIZE",       "LOCAL_RANK", "LOCAL_SIZE",
                                          "CROSS_RANK", "CROSS_SIZE", "HOSTNAME"};
  for (const char* prefix : {"HVD_", "HOROVOD_"}) {
    for (const char* suffix : kSuffixes) {
      if (name == std::string(prefix) + suffix) return true;
    }
  }
  for (const char* other :
       {"HVD_RENDEZVOUS_ADDR", "HVD_RENDEZVOUS_PORT", "HOROVOD_GLOO_RENDEZVOUS_ADDR",
        "HOROVOD_GLOO_RENDEZVOUS_PORT", "HVD_SECRET_FD", "HVD_JOB_ID"}) {
    if (name == other) return true;
  }
  return false;
}

// The environment mpirun runs with, and the names it exports to every rank.
EnvMap MpirunEnvironment(const LaunchSpec& spec, const env::Environment& env,
                         std::vector<std::string>* exported) {
  EnvMap vars;
  for (const auto& [name, value] : env.all()) {
    if (!IsPerRankVariable(name)) vars[name] = value;
  }
  // No PYTHONUNBUFFERED here (hvdrun's own launcher sets it and relays whole lines): mpirun's
  // --tag-output tags every chunk it reads, and an unbuffered print() arrives as several
  // ("[1,0]<stdout>:rank[1,0]<stdout>: ..."), two ranks' pieces on one line. As under
  // horovodrun + mpirun, Python's output is block-buffered; a user's own PYTHONUNBUFFERED passes.
  EnvMap job = spec.worker_env;
  if (std::optional<std::string> lib = FindRuntimeLibrary(SelfExecutablePath())) {
    if (vars.count("HVD_RUNTIME_LIBRARY") == 0) job["HVD_RUNTIME_LIBRARY"] = *lib;
  }
  for (const auto& [name, value] : job) {
    vars[name] = value;
    exported->push_back(name);
  }
  for (const auto& [name, value] : vars) {
    if (IsForwardedToRemoteHosts(name) || name == "PATH" || name == "LD_LIBRARY_PATH") {
      exported->push_back(name);
    }
  }
  return vars;
}

// --worker-threads share (launcher/worker/worker_threads.h) where mpirun starts every rank on
// this machine, whose cores hvdrun can count: each rank gets OMP_NUM_THREADS = the physical
// cores of hvdrun's affinity (mpirun's, and the ranks' under -bind-to none) / the ranks. Ranks
// on other hosts keep torch's default: hvdrun knows neither their cores nor a way to give each
// host its own value through one mpirun (hvd-agent does that without --mpi).
void ShareThreadsUnderMpirun(const LaunchSpec& spec, const JobPlan& plan, EnvMap& vars,
                             MpirunInputs& in) {
  if (!plan.remote_hosts.empty()) {
    auto policy = vars.find(kWorkerThreadsVar);
    if (policy != vars.end() && policy->second == "share" && vars.count("OMP_NUM_THREADS") == 0) {
      PrintStep(spec.verbose,
                "--worker-threads share: not applied under --mpi with other hosts (mpirun starts "
                "their ranks with torch's default threads); give them OMP_NUM_THREADS through "
                "--mpi-args (Open MPI: -x OMP_NUM_THREADS=N)");
    }
    return;
  }
  if (vars.count("OMP_NUM_THREADS") > 0) return;  // the user's: the ranks inherit it from mpirun
  ShareWorkerThreads(vars, PhysicalCores(AllowedCpus()), in.num_proc);
  auto omp = vars.find("OMP_NUM_THREADS");
  if (omp != vars.end()) in.env_settings.emplace_back(omp->first, omp->second);
}

// Forks and execs argv (execvpe's PATH search) in a new process group with the signal mask
// cleared; -1 when fork fails. The child only calls async-signal-safe functions.
pid_t StartChild(const std::vector<std::string>& argv, const EnvMap& vars) {
  ChildPlan plan(argv, vars);
  plan.group = ChildPlan::Group::kNewGroup;
  plan.search = ChildPlan::Search::kParentPath;
  pid_t pid = ::fork();
  if (pid == 0) RunChild(plan, 0);
  if (pid > 0) ::setpgid(pid, pid);
  return pid;
}

// Waits for `pid`, forwarding hvdrun's signals to it; returns hvdrun's exit code.
int WaitChild(pid_t pid, SignalChannel& signals) {
  std::optional<int> launcher_signal;
  while (true) {
    pollfd p = {signals.fd(), POLLIN, 0};
    if (::poll(&p, 1, -1) < 0 && errno != EINTR) break;
    for (int signo : signals.ReadPending()) {
      if (signo == SIGCHLD || signo == SIGPIPE) continue;
      if (signo == SIGQUIT) {
        PrintToUser(
            "received SIGQUIT: under mpirun (--mpi) hvdrun cannot ask the ranks for their "
            "stacks (its own launcher does); the job goes on");
        continue;
      }
      if (!launcher_signal) {
        launcher_signal = signo;
        PrintToUser("received " + std::string(strsignal(signo)) + ", stopping mpirun");
        ::kill(pid, signo);
      } else {
        ::kill(-pid, SIGKILL);
      }
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      ::kill(-pid, SIGKILL);  // whatever mpirun left in its group
      if (launcher_signal) return kExitSignalBase + *launcher_signal;
      if (WIFSIGNALED(status)) return kExitSignalBase + WTERMSIG(status);
      return WEXITSTATUS(status);
    }
  }
  ::kill(-pid, SIGKILL);
  return kExitInternal;
}

}  // namespace

int RunMpirunMode(const LaunchSpec& spec, const env::Environment& env, const JobPlan& plan) {
  MpirunInputs in;
  in.flavor = DetectMpiFlavor(MpirunVersion());
  in.num_proc = static_cast<int>(plan.ranks.size());
  in.hosts = plan.allocation.hosts;
  in.nics = spec.network_interfaces;
  in.binding_args = spec.binding_args;
  in.mpi_args = spec.mpi_args;
  in.ssh_port = spec.ssh_port;
  in.ssh_identity_file = spec.ssh_identity_file;
  in.ssh_known_hosts_file = spec.ssh_known_hosts_file;
  in.ssh_accept_new_host_keys = spec.ssh_accept_new_host_keys;
  in.output_filename = spec.output_filename;
  in.prefix_timestamp = spec.prefix_timestamp;
  in.run_as_root = ::geteuid() == 0;
  in.command = spec.command;
  EnvMap vars = MpirunEnvironment(spec, env, &in.env_names);
  ShareThreadsUnderMpirun(spec, plan, vars, in);
  Result<std::vector<std::string>> argv = BuildMpirunCommand(in);
  if (!argv.ok()) {
    PrintToUser("error: " + argv.status().message());
    return argv.status().code() == StatusCode::kNotFound ? kExitLaunchFailed : kExitUsage;
  }
  PrintStep(spec.verbose, "MPI: " + MpiFlavorName(in.flavor));
  if (spec.dry_run) {
    std::string text = "hvdrun dry run (--mpi, " + MpiFlavorName(in.flavor) +
                       "); nothing is started\n" + ShellJoin(*argv) + "\n";
    std::fwrite(text.data(), 1, text.size(), stdout);
    return kExitOk;
  }
  PrintStep(spec.verbose, "mpirun command: " + ShellJoin(*argv));
  Result<SignalChannel> signals = SignalChannel::Open();
  if (!signals.ok()) {
    PrintToUser(signals.status().message());
    return kExitInternal;
  }
  pid_t pid = StartChild(*argv, vars);
  if (pid < 0) {
    PrintToUser(std::string("error: cannot start mpirun: fork: ") + strerror(errno));
    return kExitLaunchFailed;
  }
  const int code = WaitChild(pid, *signals);
  RankLeftovers leftovers;  // this host's ranks (mpirun's children) have ended with it
  leftovers.Add(vars);
  for (const std::string& line : leftovers.CleanUp()) PrintStep(spec.verbose, line);
  return code;
}

}  // namespace hvd::launcher
