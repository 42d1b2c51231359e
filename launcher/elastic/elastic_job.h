#ifndef HVD_LAUNCHER_ELASTIC_ELASTIC_JOB_H_
#define HVD_LAUNCHER_ELASTIC_ELASTIC_JOB_H_

#include <poll.h>
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/env_registry.h"
#include "launcher/elastic/discovery_poller.h"
#include "launcher/elastic/elastic_agents.h"
#include "launcher/elastic/elastic_driver.h"
#include "launcher/local/event_queue.h"
#include "launcher/local/exit_order.h"
#include "launcher/local/job_timeout.h"
#include "launcher/local/rank_leftovers.h"
#include "launcher/local/rank_spawner.h"
#include "launcher/local/signal_channel.h"
#include "launcher/local/stack_dump.h"
#include "launcher/output/output_forwarder.h"
#include "launcher/plan/launch_spec.h"
#include "launcher/rendezvous/rendezvous_server.h"
#include "launcher/worker/worker_env.h"

namespace hvd::launcher {

// Worker ready reports, handed from the rendezvous server's I/O thread (its observer) to the
// job's event loop; event_fd() is readable while some are queued. Thread-safe.
class ReadyQueue {
 public:
  int event_fd() const { return queue_.event_fd(); }
  struct Report {
    int id;
    control::elastic::ReadyReport ready;
  };
  // From the server's observer: key "elastic/ready/<id>", value elastic::EncodeReady's
  // (elastic::DecodeReady); others ignored.
  void Push(const std::string& key, const std::string& value);
  std::vector<Report> TakeAll() { return queue_.TakeAll(); }

 private:
  EventQueue<Report> queue_;
};

// Everything an elastic job's event loop needs from the launch.
struct ElasticJobContext {
  const LaunchSpec* spec = nullptr;
  const env::Environment* env = nullptr;
  JobEnvContext job;  // rendezvous address, port, job id, secret fd, runtime library
  int secret_fd = -1;
  // Remote hosts' workers start through their hvd-agent; null when the rendezvous server
  // listens on loopback only (no remote host can join).
  ElasticAgents* agents = nullptr;
  RendezvousServer* server = nullptr;
  ReadyQueue* ready = nullptr;
  // The runtime's requests for ranks' stacks (the stall inspector's missing ranks); null = none.
  StackRequests* stack_requests = nullptr;
  DiscoveryPoller* poller = nullptr;  // null with a fixed host list
  SignalChannel* signals = nullptr;
  RankSpawner* spawner = nullptr;
  OutputForwarder* output = nullptr;
  RankLeftovers* leftovers = nullptr;  // notes each local worker's environment; may be null
};

// The event loop of an elastic job: it carries out the ElasticDriver's decisions with
// processes (RankSpawner) and the rendezvous server, and feeds it what happens: worker exits
// (SIGCHLD or a remote rank's exit event), ready reports (ReadyQueue), discovery results
// (DiscoveryPoller; a failing run is a warning naming it and the last good host set stays),
// timers, and hvdrun's own signals (SIGINT/SIGTERM/SIGHUP stop every worker: SIGTERM, then
// SIGKILL after the grace period or at a second signal). Workers on other hosts start through
// the host's hvd-agent (ElasticAgents; a host that cannot be reached fails its workers, which
// blacklists it; a host whose session ended, or that left the job, gets a new session when it
// is given workers again). Worker output is forwarded as in a static job, prefixed with the
// worker's number ("[3]<stdout>:"), which is its rank in the first round. One poll() loop, no
// spinning. Threading: Run() is called once, from the thread that owns the signal channel and lives
// as long as the job (the spawner's contract).
class ElasticJob : public ElasticActions {
 public:
  ElasticJob(ElasticJobContext context, ElasticDriverOptions options);
  ~ElasticJob() override;

  // Feeds the first host list, runs until every worker is gone and returns hvdrun's exit
  // code; the reason of a failure has been printed.
  int Run(const std::vector<discovery::HostSlots>& first_hosts);
  // The signal that stopped the job (SIGINT, SIGTERM, SIGHUP, or SIGPIPE: the console closed).
  std::optional<int> launcher_signal() const { return launcher_signal_; }

  // ElasticActions
  void Spawn(int id, const std::string& host, int slot, int host_slots, int rank,
             int size) override;
  void Send(int id, int64_t n, const control::elastic::Message& message) override;
  void NotifyHosts(int64_t timestamp, int flags) override;
  void AbortRound(int64_t round) override;
  void Terminate(int id) override;
  void ReleaseHost(const std::string& host) override;
  void Step(const std::string& message) override;
  void Warn(const std::string& message) override;

 private:
  using Clock = ElasticClock;
  struct Proc {
    pid_t pid = -1;
    pid_t rank_pid = -1;            // SpawnedRank::rank_pid
    RankProcessWatch rank_process;  // rank_pid, when it runs under a guardian (pid)
    int fds[2] = {-1, -1};
    std::unique_ptr<RankHandle> handle;
    std::string host;
    bool exited = false;  // its end was seen (in exits_, or taken)
    int wait_status = 0;
    bool stopped = false;                   // hvdrun signalled it
    std::string lost;                       // why its remote host was lost, if that ended it
    std::optional<std::string> kill_cause;  // the OOM killer, where its host knows
    std::optional<Clock::time_point> kill_at;
  };

  void Loop();
  int PollTimeoutMs() const;
  void BuildPollSet(std::vector<pollfd>& fds, std::vector<std::pair<int, int>>& owners) const;
  void OnSignals();
  void OnLauncherSignal(int signo);
  // Asks the workers `ids` (those running) for their Python stacks (launcher/local/stack_dump.h),
  // saying `why`: SIGQUIT to hvdrun asks every worker, the stall inspector the ranks it names.
  void RequestStacks(const std::vector<int>& ids, const std::string& why);
  void RequestStacksOfAll(const std::string& why);
  void OnStackRequests();
  // --timeout (timeout_): the stacks when it passes, the stop when they had their time.
  void CheckTimeout();
  void OnDiscovery();
  void OnAgents();
  void SpawnRemote(int id, const SpawnRequest& request);
  void StartOnAgent(int id, const SpawnRequest& request, AgentSession& session);
  void OnReady();
  // Collect the workers that ended (into exits_) ...
  void ReapExited();
  void OnHandleEvent(int id);
  void SeeExit(int id, int wait_status);
  // ... and take them, likeliest first failure first, telling the driver (TakeExit).
  void TakeExits();
  void TakeExit(int id, int wait_status);
  // The worker whose shutdown or loss failed worker `id`'s collectives, as its runtime told
  // hvdrun (control::ShutdownCauseKey of its last round); nullopt when it named none.
  std::optional<int> FailedBy(int id) const;
  void KillOverdue();
  void KillAndReapAll();
  bool AnyAlive() const;
  int Finish();

  ElasticJobContext context_;
  ElasticDriver driver_;
  std::map<int, Proc> procs_;
  // The signal that stopped the job (SIGINT/SIGTERM/SIGHUP, SIGPIPE for a closed console), or
  // SIGTERM when --timeout did (timeout_): no worker is added or waited for any more.
  std::optional<int> launcher_signal_;
  bool killed_ = false;
  JobTimeout timeout_{0};                       // --timeout from the start
  std::optional<uint64_t> oom_kills_at_start_;  // this host's OOM kills when the job started
  // The discovery warnings shown since its last good answer: each once (OnDiscovery).
  std::set<std::string> discovery_warnings_;
  // Workers that never started (spawn or exec failure): reported to the driver from the loop,
  // never from inside one of its calls.
  std::vector<std::pair<int, int>> deferred_exits_;
  PendingExits exits_;  // the workers' ends seen but not yet taken
  // Workers waiting for their host's agent to connect, by host.
  std::map<std::string, std::vector<std::pair<int, SpawnRequest>>> awaiting_agent_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_ELASTIC_ELASTIC_JOB_H_
