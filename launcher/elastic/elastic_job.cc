#include "launcher/elastic/elastic_job.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <sstream>

#include "common/elastic_messages.h"
#include "common/kv_messages.h"
#include "launcher/local/child_process.h"
#include "launcher/local/hint_context.h"
#include "launcher/local/local_host.h"
#include "launcher/local/oom_kills.h"
#include "launcher/local/stack_dump.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/failure_hints.h"
#include "launcher/outcome/failure_summary.h"
#include "launcher/outcome/wait_status.h"
#include "launcher/output/console.h"

namespace hvd::launcher {
namespace {

namespace elastic = control::elastic;

// Poll-set owners that are not workers.
constexpr int kSignalOwner = -1;
constexpr int kReadyOwner = -2;
constexpr int kDiscoveryOwner = -3;
constexpr int kAgentsOwner = -4;
constexpr int kStackOwner = -5;
constexpr int kExitEvent = 2;  // stream index of a remote worker's exit event

ElasticClock::duration SecondsOf(double s) {
  return std::chrono::duration_cast<ElasticClock::duration>(std::chrono::duration<double>(s));
}

}  // namespace

void ReadyQueue::Push(const std::string& key, const std::string& value) {
  std::string_view id_text = std::string_view(key).substr(sizeof(elastic::kReadyPrefix) - 1);
  int id = -1;
  elastic::ReadyReport ready;
  auto [id_end, id_ec] = std::from_chars(id_text.data(), id_text.data() + id_text.size(), id);
  if (id_ec != std::errc() || id_end != id_text.data() + id_text.size() || id < 0 ||
      !elastic::DecodeReady(value, &ready)) {
    return;
  }
  queue_.Push({{id, ready}});
}

ElasticJob::ElasticJob(ElasticJobContext context, ElasticDriverOptions options)
    : context_(std::move(context)), driver_(std::move(options), this) {}

ElasticJob::~ElasticJob() {
  for (auto& [id, p] : procs_) {
    for (int& fd : p.fds) {
      if (fd >= 0) ::close(fd);
    }
    if (p.handle) p.handle->Close();
  }
}

int ElasticJob::Run(const std::vector<discovery::HostSlots>& first_hosts) {
  oom_kills_at_start_ = OomKillCount();
  timeout_ = JobTimeout(context_.spec->timeout_s);
  driver_.OnHosts(first_hosts, Clock::now());
  Loop();
  return Finish();
}

bool ElasticJob::AnyAlive() const {
  return std::any_of(procs_.begin(), procs_.end(), [](const auto& p) { return !p.second.exited; });
}

void ElasticJob::Loop() {
  std::vector<pollfd> fds;
  std::vector<std::pair<int, int>> owners;
  while (true) {
    while (!deferred_exits_.empty()) {
      auto [id, status] = deferred_exits_.front();
      deferred_exits_.erase(deferred_exits_.begin());
      SeeExit(id, status);
    }
    if ((driver_.end() || launcher_signal_) && !AnyAlive() && exits_.empty()) return;
    BuildPollSet(fds, owners);
    int ready = ::poll(fds.data(), fds.size(), PollTimeoutMs());
    if (ready < 0 && errno != EINTR) {
      PrintToUser(std::string("poll failed, killing every worker: ") + strerror(errno));
      return KillAndReapAll();
    }
    for (size_t i = 0; ready > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) continue;
      auto [owner, which] = owners[i];
      if (owner == kSignalOwner) {
        OnSignals();
      } else if (owner == kReadyOwner) {
        OnReady();
      } else if (owner == kDiscoveryOwner) {
        OnDiscovery();
      } else if (owner == kAgentsOwner) {
        OnAgents();
      } else if (owner == kStackOwner) {
        OnStackRequests();
      } else if (which == kExitEvent) {
        OnHandleEvent(owner);
      } else if (!context_.output->ReadPipe(owner, which, procs_.at(owner).fds)) {
        context_.output->ClosePipe(owner, which, procs_.at(owner).fds);
      }
    }
    TakeExits();
    if (context_.output->console_closed() && !launcher_signal_) OnLauncherSignal(SIGPIPE);
    KillOverdue();
    CheckTimeout();
    std::optional<Clock::time_point> deadline = driver_.NextDeadline();
    if (deadline && Clock::now() >= *deadline) driver_.OnTick(Clock::now());
  }
}

int ElasticJob::PollTimeoutMs() const {
  std::optional<Clock::time_point> hold = exits_.hold_deadline();
  if (!deferred_exits_.empty() || (!exits_.empty() && !hold)) return 0;
  std::optional<Clock::time_point> next = driver_.NextDeadline();
  if (hold && (!next || *hold < *next)) next = hold;
  for (const auto& [id, p] : procs_) {
    if (!p.exited && p.kill_at && (!next || *p.kill_at < *next)) next = p.kill_at;
  }
  std::optional<Clock::time_point> timeout = timeout_.NextDeadline(launcher_signal_.has_value());
  if (timeout && (!next || *timeout < *next)) next = timeout;
  // The workers' pipes wait for the console (BuildPollSet): look again soon.
  const int most = context_.output->backlogged() ? OutputForwarder::kBackloggedPollMs : 60000;
  if (!next) return most < 60000 ? most : -1;
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(*next - Clock::now());
  return static_cast<int>(std::clamp<int64_t>(left.count() + 1, 0, most));
}

void ElasticJob::BuildPollSet(std::vector<pollfd>& fds,
                              std::vector<std::pair<int, int>>& owners) const {
  fds.assign({{context_.signals->fd(), POLLIN, 0}, {context_.ready->event_fd(), POLLIN, 0}});
  owners.assign({{kSignalOwner, 0}, {kReadyOwner, 0}});
  if (context_.poller != nullptr) {
    fds.push_back({context_.poller->event_fd(), POLLIN, 0});
    owners.emplace_back(kDiscoveryOwner, 0);
  }
  if (context_.stack_requests != nullptr) {
    fds.push_back({context_.stack_requests->event_fd(), POLLIN, 0});
    owners.emplace_back(kStackOwner, 0);
  }
  if (context_.agents != nullptr) {
    fds.push_back({context_.agents->event_fd(), POLLIN, 0});
    owners.emplace_back(kAgentsOwner, 0);
  }
  // While a stalled console holds too much of their output, the workers' pipes are not read
  // (the workers block on their writes); everything else is still seen.
  const bool read_pipes = !context_.output->backlogged();
  for (const auto& [id, p] : procs_) {
    for (int which = 0; which < 2; ++which) {
      if (p.fds[which] < 0 || !read_pipes) continue;
      fds.push_back({p.fds[which], POLLIN, 0});
      owners.emplace_back(id, which);
    }
    if (p.handle && !p.exited) {
      fds.push_back({p.handle->exit_event_fd(), POLLIN, 0});
      owners.emplace_back(id, kExitEvent);
    }
  }
}

void ElasticJob::OnSignals() {
  bool child_exited = false;
  for (int signo : context_.signals->ReadPending()) {
    if (signo == SIGCHLD) {
      child_exited = true;
    } else if (signo == SIGQUIT) {
      RequestStacksOfAll("hvdrun received SIGQUIT");
    } else if (signo != SIGPIPE) {
      OnLauncherSignal(signo);
    }
  }
  if (child_exited) ReapExited();
}

void ElasticJob::RequestStacksOfAll(const std::string& why) {
  std::vector<int> all;
  for (const auto& [id, p] : procs_) all.push_back(id);
  RequestStacks(all, why);
}

void ElasticJob::RequestStacks(const std::vector<int>& ids, const std::string& why) {
  std::vector<int> running;
  for (int id : ids) {
    auto it = procs_.find(id);
    if (it != procs_.end() && !it->second.exited && !it->second.stopped) running.push_back(id);
  }
  if (running.empty()) return;
  if (!why.empty()) PrintToUser(StackRequestLine("worker", running, why, !launcher_signal_));
  for (int id : running) {
    context_.output->ShowStderrFor(id, kStackDumpWait);  // past --console-ranks
    Proc& p = procs_.at(id);
    if (!AskForStacks(p.handle.get(), p.pid)) PrintToUser(NoStackDumperLine("worker", id, p.host));
  }
}

void ElasticJob::OnStackRequests() {
  std::vector<int> ids;
  std::string ranks;
  for (int rank : context_.stack_requests->TakeAll()) {
    std::optional<int> id = driver_.WorkerOfRank(rank);
    if (!id) continue;  // a round that is over
    ids.push_back(*id);
    ranks += (ranks.empty() ? "rank " : ", rank ") + std::to_string(rank) + " is worker " +
             std::to_string(*id);
  }
  if (!ids.empty()) RequestStacks(ids, "named by the stall inspector: " + ranks);
}

void ElasticJob::CheckTimeout() {
  switch (timeout_.Check(Clock::now(), launcher_signal_.has_value())) {
    case JobTimeout::Due::kStacks:
      PrintToUser(timeout_.ExpiryLine("worker"));
      RequestStacksOfAll("");
      break;
    case JobTimeout::Due::kStop:
      if (launcher_signal_) break;  // stopped meanwhile
      launcher_signal_ = SIGTERM;
      for (auto& [id, p] : procs_) Terminate(id);
      break;
    case JobTimeout::Due::kNothing:
      break;
  }
}

void ElasticJob::OnLauncherSignal(int signo) {
  if (!launcher_signal_) {
    launcher_signal_ = signo;
    PrintToUser(signo == SIGPIPE ? std::string("hvdrun's output was closed, stopping the job")
                                 : "received " + SignalName(signo) + ", stopping the job");
    for (auto& [id, p] : procs_) Terminate(id);
    return;
  }
  if (killed_) return;
  if (signo != SIGPIPE)
    PrintToUser("received " + SignalName(signo) + " again, killing every worker now");
  killed_ = true;
  for (auto& [id, p] : procs_) {
    if (p.exited) continue;
    if (p.handle) {
      p.handle->Signal(SIGKILL);
    } else if (p.pid > 0) {
      ::kill(-p.pid, SIGKILL);
    }
  }
}

void ElasticJob::OnDiscovery() {
  std::optional<Result<std::vector<discovery::HostSlots>>> result = context_.poller->Take();
  if (!result || launcher_signal_) return;
  if (result->ok()) {
    discovery_warnings_.clear();
    driver_.OnHosts(**result, Clock::now());
    return;
  }
  // Each distinct problem once until the script answers well again, also when two alternate (a
  // bad line, then a run killed at the timeout on a loaded host, then the bad line again: until
  // 2026-12-02 only a repeat of the last one was held back). A script whose messages never
  // repeat (a time in its stderr) starts over after 16.
  std::string warning = result->status().message() + "; the last good host set stays in force";
  if (discovery_warnings_.size() >= 16) discovery_warnings_.clear();
  if (discovery_warnings_.insert(warning).second) PrintToUser("warning: " + warning);
}

void ElasticJob::OnReady() {
  for (const ReadyQueue::Report& r : context_.ready->TakeAll()) {
    if (!launcher_signal_) driver_.OnReady(r.id, r.ready, Clock::now());
  }
}

void ElasticJob::ReapExited() {
  for (auto& [id, p] : procs_) {
    if (p.exited || p.handle || p.pid <= 0) continue;
    int status = 0;
    pid_t pid;
    do {
      pid = ::waitpid(p.pid, &status, WNOHANG);
    } while (pid < 0 && errno == EINTR);
    if (pid == p.pid) SeeExit(id, status);
  }
}

void ElasticJob::OnHandleEvent(int id) {
  Proc& p = procs_.at(id);
  std::optional<int> status = p.handle->TryWait();
  if (!status || p.exited) return;
  std::string transport = p.handle->TransportError();
  if (!transport.empty() && !p.stopped)
    PrintToUser("worker " + std::to_string(id) + ": " + transport);
  p.lost = transport;
  // A lost host's session goes with it: the host, if admitted again, gets a new one.
  if (!transport.empty() && context_.agents != nullptr) context_.agents->DropIfEnded(p.host);
  SeeExit(id, *status);
}

void ElasticJob::SeeExit(int id, int wait_status) {
  Proc& p = procs_.at(id);
  if (p.exited) return;
  p.exited = true;
  p.wait_status = wait_status;
  p.rank_process.Close();
  driver_.OnEnded(id);
  if (!WaitStatusIsSuccess(wait_status) && !p.stopped && !killed_) {
    p.kill_cause = p.handle    ? p.handle->KillCause()
                   : p.pid > 0 ? ExplainKill(p.rank_pid, wait_status, oom_kills_at_start_)
                               : std::nullopt;
  }
  context_.output->DrainAndClosePipes(id, procs_.at(id).fds);
  exits_.Add(id, wait_status);
}

// Likeliest first failure first (launcher/local/exit_order.h), as job control does; a plain
// failure waits while a local worker's own process has ended but its guardian has not said so.
void ElasticJob::TakeExits() {
  PendingExits::Hooks hooks;
  hooks.signalled = [this](int id) { return procs_.at(id).stopped; };
  hooks.unreported = [this]() -> std::optional<int> {
    if (driver_.failure_seen() || driver_.end() || launcher_signal_ || killed_) return std::nullopt;
    for (const auto& [id, p] : procs_) {
      if (!p.exited && p.rank_process.Ended()) return id;
    }
    return std::nullopt;
  };
  hooks.on_hold = [this](int failed, int waited_for) {
    PrintStep(context_.spec->verbose, "worker " + std::to_string(failed) + " failed after worker " +
                                          std::to_string(waited_for) +
                                          "'s process ended; waiting for worker " +
                                          std::to_string(waited_for) + "'s status");
  };
  hooks.take = [this](int id, int wait_status) { TakeExit(id, wait_status); };
  exits_.Take(hooks);
}

void ElasticJob::TakeExit(int id, int wait_status) {
  Proc& p = procs_.at(id);
  PrintStep(context_.spec->verbose, "worker " + std::to_string(id) + " finished: " +
                                        DescribeWaitStatus(wait_status, p.kill_cause.value_or("")));
  if (!launcher_signal_) {
    // What ended it: the kernel's reason for a kill, else the exception its traceback ends with
    std::optional<std::string> cause = p.kill_cause;
    // (the driver tells a removed worker's failure from its leaving, and names only failures).
    if (!cause && WIFEXITED(wait_status) && WEXITSTATUS(wait_status) != 0 && !p.stopped &&
        !killed_) {
      cause = PythonExceptionInTail(context_.output->StderrTail(id));
    }
    std::optional<int> failed_by;
    if (!WaitStatusIsSuccess(wait_status)) failed_by = FailedBy(id);
    driver_.OnExit(id, wait_status, Clock::now(), p.lost, cause.value_or(""), failed_by);
  }
}

std::optional<int> ElasticJob::FailedBy(int id) const {
  std::optional<std::pair<int64_t, int>> at = driver_.RoundAndRankOf(id);
  if (!at) return std::nullopt;
  std::optional<std::string> named =
      context_.server->Get(control::ShutdownCauseKey(at->first, at->second));
  std::optional<int> rank = named ? control::DecodeShutdownCause(*named) : std::nullopt;
  return rank ? driver_.WorkerOfRankIn(at->first, *rank) : std::nullopt;
}

// The last resort when the event loop itself fails: nothing may outlive hvdrun.
void ElasticJob::KillAndReapAll() {
  if (!launcher_signal_) launcher_signal_ = SIGKILL;
  for (auto& [id, p] : procs_) {
    if (p.exited) continue;
    int status = W_EXITCODE(0, SIGKILL);
    if (p.handle) {
      p.handle->Close();
    } else if (p.pid > 0) {
      ::kill(-p.pid, SIGKILL);
      while (::waitpid(p.pid, &status, 0) < 0 && errno == EINTR) {
      }
    }
    p.exited = true;
    p.wait_status = status;
  }
}

void ElasticJob::KillOverdue() {
  const Clock::time_point now = Clock::now();
  for (auto& [id, p] : procs_) {
    if (p.exited || !p.kill_at || *p.kill_at > now) continue;
    p.kill_at.reset();
    if (p.handle) {
      p.handle->Signal(SIGKILL);
    } else if (p.pid > 0) {
      ::kill(-p.pid, SIGKILL);
    }
  }
}

void ElasticJob::Spawn(int id, const std::string& host, int slot, int host_slots, int rank,
                       int size) {
  const LaunchSpec& spec = *context_.spec;
  if (Status s = context_.output->Grow(id + 1); !s.ok()) PrintToUser("warning: " + s.message());
  // Its place at the start: slot `slot` of the host's `host_slots` (what the CPU binding and the
  // threads' share divide the host by); each round gives the worker its rank and topology.
  discovery::RankInfo info{rank, slot, host_slots, 0, 1, host};
  JobEnvContext job = context_.job;
  job.size = size;
  SpawnRequest request;
  request.rank = id;
  request.host = host;
  request.argv = spec.command;
  request.inherited_fd = context_.secret_fd;
  request.remote = !IsLocalHost(host);
  if (request.remote) {
    job.host_cores = 0;      // the host's agent counts its own CPUs
    job.gloo_iface.clear();  // each host's agent picks its own interface (as in static jobs)
    job.nccl_socket_ifname.clear();
    if (!spec.network_interfaces.empty()) {
      job.gloo_iface = context_.job.gloo_iface;
      job.nccl_socket_ifname = context_.job.nccl_socket_ifname;
    }
  }
  request.env = request.remote
                    ? BuildRemoteWorkerEnv(context_.env->all(), spec.worker_env, info, job)
                    : BuildWorkerEnv(context_.env->all(), spec.worker_env, info, job);
  request.env["HVD_ELASTIC"] = request.env["HOROVOD_ELASTIC"] = "1";
  request.env["HVD_ELASTIC_WORKER_ID"] = std::to_string(id);
  Proc& p = procs_[id];
  p.host = host;
  if (request.remote) return SpawnRemote(id, request);
  if (context_.leftovers != nullptr) context_.leftovers->Add(request.env);
  Result<SpawnedRank> spawned = context_.spawner->Spawn(request);
  if (!spawned.ok()) {
    PrintToUser("cannot start worker " + std::to_string(id) + " on " + host + ": " +
                spawned.status().message());
    deferred_exits_.emplace_back(id, W_EXITCODE(kExitLaunchFailed, 0));
    return;
  }
  p.pid = spawned->pid;
  p.rank_pid = spawned->rank_pid;
  if (!spawned->handle) p.rank_process = RankProcessWatch(spawned->rank_pid, spawned->pid);
  p.fds[0] = spawned->stdout_fd;
  p.fds[1] = spawned->stderr_fd;
  p.handle = std::move(spawned->handle);
  if (spawned->stdin_fd >= 0) ::close(spawned->stdin_fd);
  if (spawned->exec_error) {
    PrintToUser("worker " + std::to_string(id) + " on " + host + ": " + *spawned->exec_error);
    deferred_exits_.emplace_back(id, spawned->exec_wait_status);
  }
}

void ElasticJob::SpawnRemote(int id, const SpawnRequest& request) {
  if (context_.agents == nullptr) {
    PrintToUser("cannot start worker " + std::to_string(id) + " on " + request.host +
                ": hvdrun listens on loopback only because no host of the first host set was "
                "remote; give --network-interface NIC to let remote hosts join later");
    deferred_exits_.emplace_back(id, W_EXITCODE(kExitLaunchFailed, 0));
    return;
  }
  if (AgentSession* session = context_.agents->session(request.host)) {
    return StartOnAgent(id, request, *session);
  }
  awaiting_agent_[request.host].emplace_back(id, request);
  context_.agents->Connect(request.host);
}

void ElasticJob::StartOnAgent(int id, const SpawnRequest& request, AgentSession& session) {
  Result<SpawnedRank> spawned =
      session.StartRank(static_cast<uint32_t>(id), request.argv, request.env);
  if (!spawned.ok()) {
    PrintToUser("cannot start worker " + std::to_string(id) + " on " + request.host + ": " +
                spawned.status().message());
    deferred_exits_.emplace_back(id, W_EXITCODE(kExitLaunchFailed, 0));
    return;
  }
  Proc& p = procs_.at(id);
  p.fds[0] = spawned->stdout_fd;
  p.fds[1] = spawned->stderr_fd;
  p.handle = std::move(spawned->handle);
  PrintStep(context_.spec->verbose,
            "worker " + std::to_string(id) + " started on " + request.host + " (hvd-agent)");
}

void ElasticJob::OnAgents() {
  for (auto& [host, status] : context_.agents->TakeFinished()) {
    std::vector<std::pair<int, SpawnRequest>> waiting = std::move(awaiting_agent_[host]);
    awaiting_agent_.erase(host);
    AgentSession* session = status.ok() ? context_.agents->session(host) : nullptr;
    if (session == nullptr) {
      std::string why = "cannot reach host " + host + ": " + status.message();
      if (waiting.empty()) {
        PrintStep(context_.spec->verbose, why);  // a connection made ahead, or no longer wanted
      } else {
        PrintToUser(why);
      }
    } else {
      PrintStep(context_.spec->verbose, "hvd-agent running on " + host);
    }
    for (auto& [id, request] : waiting) {
      if (procs_.at(id).stopped) {
        deferred_exits_.emplace_back(id, W_EXITCODE(0, SIGTERM));
      } else if (session != nullptr) {
        StartOnAgent(id, request, *session);
      } else {
        deferred_exits_.emplace_back(id, W_EXITCODE(kExitLaunchFailed, 0));
      }
    }
  }
}

void ElasticJob::Send(int id, int64_t n, const elastic::Message& message) {
  context_.server->Set(elastic::MailKey(id, n), elastic::EncodeMessage(message));
}

void ElasticJob::NotifyHosts(int64_t timestamp, int flags) {
  context_.server->Set(elastic::kHostsKey, elastic::EncodeHostUpdate(timestamp, flags));
}

void ElasticJob::AbortRound(int64_t round) {
  context_.server->AbortPrefix(elastic::RoundPrefix(round),
                               "elastic round " + std::to_string(round) +
                                   " was given up by hvdrun's driver (a member failed or left)");
}

void ElasticJob::Terminate(int id) {
  auto it = procs_.find(id);
  if (it == procs_.end() || it->second.exited || it->second.stopped) return;
  Proc& p = it->second;
  p.stopped = true;
  const int signo = context_.spec->grace_period_s > 0 ? SIGTERM : SIGKILL;
  if (p.handle) {
    p.handle->Signal(signo);
  } else if (p.pid > 0) {
    SignalRankGroup(p.pid, signo);
  }  // else it waits for its host's agent and is reported stopped when that answers
  if (signo == SIGTERM) p.kill_at = Clock::now() + SecondsOf(context_.spec->grace_period_s);
}

void ElasticJob::ReleaseHost(const std::string& host) {
  if (context_.agents != nullptr) context_.agents->Release(host);  // none for a local host
}

void ElasticJob::Step(const std::string& message) { PrintStep(context_.spec->verbose, message); }

void ElasticJob::Warn(const std::string& message) { PrintToUser(message); }

int ElasticJob::Finish() {
  for (auto& [id, p] : procs_) {
    // Whatever the workers left in their groups. A worker reaped long ago (a long job's early
    // rounds) may have its pid taken by another process by now, whose own group that id then
    // is: leave a group whose leader's pid is alive again after the worker was reaped.
    const bool reused = p.exited && p.pid > 0 && PidInUse(p.pid);
    if (p.pid > 0 && !reused) ::kill(-p.pid, SIGKILL);
    if (p.handle) p.handle->Close();
  }
  std::string headline;
  int code = kExitOk;
  if (timeout_.expired()) {
    std::ostringstream limit;
    limit << context_.spec->timeout_s;
    code = kExitTimeout;
    headline =
        "the job ran past --timeout (" + limit.str() + " s); hvdrun exits " + std::to_string(code);
  } else if (launcher_signal_) {
    code = kExitSignalBase + *launcher_signal_;
    headline = "hvdrun received " + SignalName(*launcher_signal_) + "; hvdrun exits " +
               std::to_string(code);
  } else if (driver_.end() && !driver_.end()->success) {
    code = driver_.end()->exit_code;
    headline = driver_.end()->message + "; hvdrun exits " + std::to_string(code);
  }
  if (code == kExitOk) return code;
  JobOutcome outcome;
  outcome.launch_error = headline;
  outcome.unit = "worker";
  for (const auto& [id, p] : procs_) {
    RankOutcome rank;
    rank.rank = id;
    rank.host = p.host;
    rank.remote = p.handle != nullptr;
    rank.started = p.pid > 0 || p.handle != nullptr;
    rank.finished = p.exited;
    rank.wait_status = p.wait_status;
    // Signalled by hvdrun before it ended, or left on the driver's word (a removed worker that
    // failed before it read its removal failed on its own).
    rank.stopped_by_hvdrun = p.lost.empty() && (p.stopped || driver_.LeftWhenAsked(id));
    if (!p.lost.empty()) rank.transport_error = p.lost;
    rank.kill_cause = p.kill_cause;
    outcome.ranks.push_back(rank);
  }
  // Marked in the table, its stderr shown first (worker ids are 0, 1, ... as procs_ holds them).
  std::optional<int> first = driver_.first_failure_worker();
  if (first && static_cast<size_t>(*first) < outcome.ranks.size() &&
      outcome.ranks[static_cast<size_t>(*first)].rank == *first) {
    outcome.first_failed_rank = first;
  }
  const StderrTailFn tail = [&](int id) { return context_.output->StderrTail(id); };
  PrintToUser(
      "elastic " + FormatFailureSummary(outcome, tail) +
      FormatFailureHints(outcome, tail,
                         LocalHintContext(context_.spec->command.front(), context_.env->all())));
  return code;
}

}  // namespace hvd::launcher
