#include "launcher/run.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/fd.h"
#include "common/job_key.h"
#include "common/kv_messages.h"
#include "launcher/agents/agent_spawner.h"
#include "launcher/dry_run.h"
#include "launcher/elastic_run.h"
#include "launcher/job_controller.h"
#include "launcher/local/hint_context.h"
#include "launcher/local/job_id.h"
#include "launcher/local/rank_leftovers.h"
#include "launcher/local/signal_channel.h"
#include "launcher/local/stack_dump.h"
#include "launcher/mpirun_launch.h"
#include "launcher/multi_host.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/failure_hints.h"
#include "launcher/outcome/failure_summary.h"
#include "launcher/outcome/wait_status.h"
#include "launcher/output/console.h"
#include "launcher/output/console_sink.h"
#include "launcher/plan/job_plan.h"
#include "launcher/preflight.h"
#include "launcher/rendezvous/rendezvous_server.h"
#include "launcher/worker/cpu_binding.h"
#include "launcher/worker/runtime_library.h"
#include "launcher/worker/worker_env.h"
#include "launcher/worker/worker_threads.h"

namespace hvd::launcher {
namespace {

// A port that was free a moment ago, for torchrun's MASTER_PORT (the rank that binds it
// may race with another program, as with torchrun's own choice).
Result<int> PickFreePort(const std::string& address) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::IoError("socket() for MASTER_PORT failed");
  sockaddr_in addr = {};
  addr.sin_family = AF_INET;
  inet_pton(AF_INET, address.c_str(), &addr.sin_addr);
  socklen_t len = sizeof(addr);
  bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
            ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0;
  ::close(fd);
  if (!ok) return Status::IoError("cannot find a free port on " + address + " for MASTER_PORT");
  return static_cast<int>(ntohs(addr.sin_port));
}

// hvdrun's stdin when rank 0 should get it: not when it is closed, nor when it is a
// terminal hvdrun does not own (a background job reading it would be stopped by SIGTTIN).
int ForwardableStdin() {
  if (::fcntl(0, F_GETFD) < 0) return -1;
  if (::isatty(0) && ::tcgetpgrp(0) != ::getpgrp()) return -1;
  return 0;
}

// Prints why the launch cannot go on and returns `code` for hvdrun to exit with.
int Fail(int code, const Status& status) {
  PrintToUser(status.message());
  return code;
}

// torchrun's MASTER_ADDR, where a plain torch.distributed script's rank 0 serves its store:
// hvdrun's own address when rank 0 runs here, else rank 0's host as given (-H, hostfile,
// allocation), the name the user would pass torchrun's --master-addr.
std::string MasterAddress(const JobPlan& plan, const std::string& address) {
  for (const discovery::RankInfo& rank : plan.ranks) {
    if (rank.rank == 0 && plan.IsRemote(rank.host)) return rank.host;
  }
  return address;
}

// The ranks' context as far as it is known before anything starts (what --dry-run shows), with
// the rendezvous at `address`; what is chosen at launch is a placeholder.
JobEnvContext DryRunContext(const JobPlan& plan, const env::Environment& env,
                            const std::string& address) {
  JobEnvContext job;
  job.size = static_cast<int>(plan.ranks.size());
  job.rendezvous_addr = address;
  job.rendezvous_port = "<rendezvous port, chosen at launch>";
  job.master_addr =
      UsersMasterSetting(env.all(), "MASTER_ADDR").value_or(MasterAddress(plan, address));
  job.master_port =
      UsersMasterSetting(env.all(), "MASTER_PORT").value_or("<free port, chosen at launch>");
  job.job_id = "<random, chosen at launch>";
  job.secret_fd = "<descriptor number, chosen at launch>";
  job.runtime_library = FindRuntimeLibrary(SelfExecutablePath());
  return job;
}

// The interfaces the ranks are told to use. Interfaces named by the user apply on every
// host (as in Horovod); one chosen here applies to local ranks only, and hvd-agent picks
// each remote host's own interface toward the rendezvous address (the names differ).
void SetInterfaces(const LaunchSpec& spec, const std::optional<MultiHostSetup>& setup,
                   JobEnvContext& job) {
  if (!spec.network_interfaces.empty()) {
    job.gloo_iface = spec.network_interfaces.front();
    for (const std::string& nic : spec.network_interfaces) {
      job.nccl_socket_ifname += (job.nccl_socket_ifname.empty() ? "" : ",") + nic;
    }
  } else if (setup && !setup->network.interface.name.empty()) {
    job.gloo_iface = setup->network.interface.name;
    job.nccl_socket_ifname = job.gloo_iface;
  }
}

std::vector<SpawnRequest> BuildRequests(const LaunchSpec& spec, const env::Environment& env,
                                        const JobPlan& plan, const JobEnvContext& job,
                                        int secret_fd) {
  JobEnvContext remote_job = job;
  remote_job.host_cores = 0;  // each host's agent counts its own
  if (spec.network_interfaces.empty()) {
    remote_job.gloo_iface.clear();
    remote_job.nccl_socket_ifname.clear();
  }
  // The cores here are shared by every rank started here, under whatever host names
  // (-H localhost:1,127.0.0.1:1 is one machine, two hosts)
  JobEnvContext local_job = job;
  local_job.ranks_here = static_cast<int>(
      std::count_if(plan.ranks.begin(), plan.ranks.end(),
                    [&](const discovery::RankInfo& rank) { return !plan.IsRemote(rank.host); }));
  std::vector<SpawnRequest> requests;
  int index_here = 0;
  for (const discovery::RankInfo& rank : plan.ranks) {
    SpawnRequest request;
    request.rank = rank.rank;
    request.host = rank.host;
    request.argv = spec.command;
    request.remote = plan.IsRemote(rank.host);
    if (!request.remote) request.machine_slot = std::make_pair(index_here++, local_job.ranks_here);
    request.env = request.remote
                      ? BuildRemoteWorkerEnv(env.all(), spec.worker_env, rank, remote_job)
                      : BuildWorkerEnv(env.all(), spec.worker_env, rank, local_job);
    request.stdin_pipe = rank.rank == 0 && !request.remote;
    request.inherited_fd = request.remote ? -1 : secret_fd;
    requests.push_back(std::move(request));
  }
  return requests;
}

int RunRanks(const LaunchSpec& spec, const env::Environment& env, const JobPlan& plan,
             const JobEnvContext& job, int secret_fd, SignalChannel& signals, RankSpawner& spawner,
             const RendezvousServer& server, StackRequests& stack_requests) {
  OutputForwarder::Options output_options;
  output_options.size = job.size;
  output_options.prefix_timestamp = spec.prefix_timestamp;
  output_options.output_dir = spec.output_filename;
  output_options.console_ranks = spec.console_ranks;
  OutputForwarder output(output_options);
  if (Status status = output.OpenFiles(); !status.ok()) return Fail(kExitLaunchFailed, status);
  JobControlOptions control;
  control.start_timeout_s = spec.start_timeout_s;
  control.grace_period_s = spec.grace_period_s;
  control.timeout_s = spec.timeout_s;
  control.verbose = spec.verbose;
  control.stdin_source_fd = ForwardableStdin();
  control.stack_requests = &stack_requests;
  control.shutdown_cause = [&server](int rank) -> std::optional<int> {
    std::optional<std::string> cause = server.Get(control::ShutdownCauseKey(0, rank));
    return cause ? control::DecodeShutdownCause(*cause) : std::nullopt;
  };
  PrintStep(spec.verbose,
            "starting " + std::to_string(job.size) + " ranks: " + ShellJoin(spec.command));
  std::vector<SpawnRequest> requests = BuildRequests(spec, env, plan, job, secret_fd);
  RankLeftovers leftovers;
  for (const SpawnRequest& request : requests) {
    if (!request.remote) leftovers.Add(request.env);
  }
  JobOutcome outcome = JobController(control, spawner, output, signals).Run(std::move(requests));
  for (const std::string& line : leftovers.CleanUp()) PrintStep(spec.verbose, line);
  int code = ExitCodeOf(outcome);
  if (code != kExitOk) {
    for (RankOutcome& rank : outcome.ranks) {
      rank.reported_failure =
          server.Get(std::string(control::kFailureReportPrefix) + std::to_string(rank.rank));
      rank.shut_down_by = control.shutdown_cause(rank.rank);
    }
    ApplyFailureReports(outcome);
    const StderrTailFn tail = [&](int r) { return output.StderrTail(r); };
    PrintToUser(
        FormatFailureSummary(outcome, tail) +
        FormatFailureHints(outcome, tail, LocalHintContext(spec.command.front(), env.all())));
  }
  // Stopped by a signal: its last lines get a moment, not a stalled reader's whole pause.
  if (outcome.launcher_signal) ConsoleFlush(kStoppedFlush);
  return code;
}

// Starts the rendezvous server on `address` and fills in the job id and ports.
Result<std::unique_ptr<RendezvousServer>> StartServer(const LaunchSpec& spec,
                                                      const std::string& address,
                                                      const control::JobKey& key,
                                                      JobEnvContext& job,
                                                      StackRequests& stack_requests) {
  job.job_id = NewJobId();
  RendezvousServerOptions server_options;
  server_options.bind_address = address;
  server_options.key = key;
  server_options.job_id = job.job_id;
  server_options.observers.push_back(StackRequestObserver(stack_requests));
  auto server = RendezvousServer::Start(server_options);
  if (!server.ok()) return server.status().WithContext("cannot start the rendezvous server");
  job.rendezvous_port = std::to_string((*server)->port());
  PrintStep(spec.verbose, "rendezvous server listening on " + (*server)->address() + ":" +
                              job.rendezvous_port + " (job " + job.job_id + ")");
  if (job.runtime_library) PrintStep(spec.verbose, "runtime library: " + *job.runtime_library);
  return server;
}

// A stopping signal (SIGINT, SIGTERM, SIGHUP) pending for this process: the signal channel
// blocks them in every thread, so they wait here until the job's event loop reads them.
std::optional<int> PendingStopSignal() {
  sigset_t pending;
  if (::sigpending(&pending) != 0) return std::nullopt;
  for (int signo : {SIGINT, SIGTERM, SIGHUP}) {
    if (sigismember(&pending, signo) == 1) return signo;
  }
  return std::nullopt;
}

// Runs `prepare` (the remote agents' start-up: up to --start-timeout, more with retries) on a
// thread of its own while this one watches for a stopping signal without taking it. Nothing
// read the signals during that phase: a Ctrl-C or a scheduler's SIGTERM did nothing for up to
// the whole start timeout, and a failed start-up then exited 69, not 128+N (until 2026-12-01).
// On a signal hvdrun exits at once with 128+N: no rank was started yet, and the agents started
// so far end with their connections (an SSH agent or srun step whose hvdrun is gone).
Result<MultiHostSetup> PrepareInterruptibly(
    const std::function<Result<MultiHostSetup>()>& prepare) {
  std::mutex mu;
  std::condition_variable done_cv;
  std::optional<Result<MultiHostSetup>> result;
  std::thread worker([&] {
    Result<MultiHostSetup> r = prepare();
    std::lock_guard<std::mutex> lock(mu);
    result.emplace(std::move(r));
    done_cv.notify_one();
  });
  std::unique_lock<std::mutex> lock(mu);
  for (;;) {
    if (std::optional<int> signo = PendingStopSignal()) {
      PrintToUser("received " + SignalName(*signo) +
                  " while starting hvd-agent on the remote hosts; no rank was started");
      ConsoleFlush(kStoppedFlush, false);  // the signal stays pending: only the time bounds it
      std::fflush(nullptr);
      ::_exit(kExitSignalBase + *signo);
    }
    if (result) break;
    done_cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return result.has_value(); });
  }
  lock.unlock();
  worker.join();
  return std::move(*result);
}

int LaunchJob(const LaunchSpec& spec, const env::Environment& env, const JobPlan& plan) {
  // Before any thread exists: the rendezvous server's I/O thread and the agent sessions'
  // threads inherit the blocked mask.
  Result<SignalChannel> signals = SignalChannel::Open();
  if (!signals.ok()) return Fail(kExitInternal, signals.status());
  Result<control::JobKey> key = control::GenerateJobKey();
  if (!key.ok()) return Fail(kExitInternal, key.status());
  // One hvd-agent per remote host, all running before anything starts anywhere.
  std::optional<MultiHostSetup> setup;
  if (!plan.remote_hosts.empty()) {
    Result<MultiHostSetup> prepared = PrepareInterruptibly([&] {
      return plan.srun ? PrepareSrunHosts(spec, env, plan, *key)
                       : PrepareMultiHost(spec, env, plan, *key);
    });
    if (!prepared.ok()) return Fail(kExitLaunchFailed, prepared.status());
    setup = std::move(*prepared);
  }
  const std::string address = setup ? setup->network.interface.address : kLoopbackAddress;
  Result<int> secret_fd = control::WriteKeyToMemfd(*key);
  if (!secret_fd.ok()) return Fail(kExitLaunchFailed, secret_fd.status());
  FdCloser close_secret{*secret_fd};  // the key's memfd, closed when the job ends

  JobEnvContext job = DryRunContext(plan, env, address);
  if (!UsersMasterSetting(env.all(), "MASTER_PORT")) {
    Result<int> master_port = PickFreePort(address);
    if (!master_port.ok()) return Fail(kExitLaunchFailed, master_port.status());
    job.master_port = std::to_string(*master_port);
  }
  job.host_cores = PhysicalCores(AllowedCpus());
  SetInterfaces(spec, setup, job);
  job.secret_fd = std::to_string(*secret_fd);
  StackRequests stack_requests;  // outlives the server, whose I/O thread pushes to it
  auto server = StartServer(spec, address, *key, job, stack_requests);
  if (!server.ok()) return Fail(kExitLaunchFailed, server.status());

  int code;
  {
    AgentSpawner spawner(setup ? setup->agents.get() : nullptr);
    code = RunRanks(spec, env, plan, job, *secret_fd, *signals, spawner, **server, stack_requests);
  }
  if (setup) setup->agents.reset();  // remote ranks are gone before the rendezvous server stops
  (*server)->Stop();
  return code;
}

// "; -np after the command is its own argument ..." when hvdrun's options were given after the
// command (`hvdrun python3 t.py -np 2`), else "".
std::string MisplacedOptionsNote(const LaunchSpec& spec) {
  const std::vector<std::string>& words = spec.options_after_command;
  if (words.empty()) return "";
  const std::string text = fmt::format("; {}", fmt::join(words, ", "));
  std::string example = spec.command.front();
  if (spec.command.size() > 1 && spec.command[1].rfind('-', 0) != 0) {
    example += " " + spec.command[1];
  }
  return text + " after the command " +
         (words.size() == 1 ? "is the command's own argument" : "are the command's own arguments") +
         ": hvdrun reads its options before the command (hvdrun -np 2 " + example + " ...)";
}

}  // namespace

int Run(const LaunchSpec& spec, const env::Environment& env) {
  if (spec.elastic()) return RunElastic(spec, env);
  Result<JobPlan> plan = PlanJob(spec, env);
  if (!plan.ok()) {
    PrintToUser("error: " + plan.status().message() + MisplacedOptionsNote(spec));
    return kExitUsage;
  }
  if (!spec.console_ranks.empty() &&
      static_cast<size_t>(spec.console_ranks.back()) >= plan->ranks.size()) {
    PrintToUser("error: --console-ranks: rank " + std::to_string(spec.console_ranks.back()) +
                " is not in this job of " + std::to_string(plan->ranks.size()) + " ranks");
    return kExitUsage;
  }
  PrintStep(spec.verbose, "hosts from " + plan->allocation.source + "; " +
                              std::to_string(plan->ranks.size()) + " ranks planned");
  if (spec.verbose) PrintToUser("rank plan:\n" + FormatPlanTable(*plan));
  if (!plan->srun_note.empty()) PrintStep(spec.verbose, plan->srun_note);
  if (!plan->allocation_note.empty()) PrintStep(spec.verbose, plan->allocation_note);
  if (spec.check) return RunCheckMode(spec, env, *plan);
  if (spec.controller == Controller::kMpi) return RunMpirunMode(spec, env, *plan);
  if (spec.dry_run) {
    const std::string address = plan->remote_hosts.empty()
                                    ? kLoopbackAddress
                                    : "<address toward the remote hosts, see --check>";
    // Each rank's environment as the launch builds it (BuildRequests), with what only the
    // launch knows as placeholders.
    JobEnvContext job = DryRunContext(*plan, env, address);
    job.host_cores = PhysicalCores(AllowedCpus());
    SetInterfaces(spec, std::nullopt, job);
    std::map<int, EnvMap> rank_envs;
    for (SpawnRequest& request : BuildRequests(spec, env, *plan, job, -1)) {
      rank_envs[request.rank] = std::move(request.env);
    }
    std::string text = FormatDryRun(spec, *plan, job, rank_envs, env.all());
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
    return kExitOk;
  }
  return LaunchJob(spec, env, *plan);
}

}  // namespace hvd::launcher
