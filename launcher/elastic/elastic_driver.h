#ifndef HVD_LAUNCHER_ELASTIC_ELASTIC_DRIVER_H_
#define HVD_LAUNCHER_ELASTIC_ELASTIC_DRIVER_H_

#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "common/elastic_messages.h"
#include "discovery/host_blacklist.h"
#include "discovery/host_slots.h"

namespace hvd::launcher {

using ElasticClock = std::chrono::steady_clock;

// What the elastic driver asks the outside world to do; the event loop (elastic_run.cc)
// implements it with processes and the rendezvous server, tests with a recorder.
class ElasticActions {
 public:
  virtual ~ElasticActions() = default;
  // Starts worker `id` on `host` in `slot` (0-based, below the host's slot count `host_slots`).
  // `rank` and `size` are what the worker's environment says before its first init (HVD_RANK,
  // ...).
  virtual void Spawn(int id, const std::string& host, int slot, int host_slots, int rank,
                     int size) = 0;
  // Puts the worker's n-th message into its mailbox (common/elastic_messages.h).
  virtual void Send(int id, int64_t n, const control::elastic::Message& message) = 0;
  // Publishes the latest host change for check_host_updates().
  virtual void NotifyHosts(int64_t timestamp, int flags) = 0;
  // Gives up on round `round`'s rendezvous keys (RendezvousServer::AbortPrefix).
  virtual void AbortRound(int64_t round) = 0;
  // Stops a worker: SIGTERM to its process group, SIGKILL after the grace period.
  virtual void Terminate(int id) = 0;
  // `host` had workers, has left the job (discovery no longer lists it, or it is blacklisted
  // for good) and none of its workers is alive any more: what the job holds open there (its
  // hvd-agent session) can go. Should the host come back it starts afresh.
  virtual void ReleaseHost(const std::string& host) = 0;
  // A line for the user: a step with --verbose, else logged.
  virtual void Step(const std::string& message) = 0;
  // A warning the user always sees.
  virtual void Warn(const std::string& message) = 0;
};

struct ElasticDriverOptions {
  int start_np = 1;  // -np: slots needed before the first workers start
  int min_np = 1;    // --min-np: fewer members than this and no round is formed
  std::optional<int> max_np;
  std::optional<int> reset_limit;
  ElasticClock::duration elastic_timeout = std::chrono::seconds(600);
  // How long the first round (and a scale-up) waits for every new worker to be ready before it
  // goes ahead with those that are.
  ElasticClock::duration start_timeout = std::chrono::seconds(30);
  // Removed workers that did not leave by themselves are stopped this long after the round
  // without them formed.
  ElasticClock::duration grace_period = std::chrono::seconds(5);
  std::optional<std::pair<int, int>> cooldown_range_s;
  uint64_t seed = 0;
};

// How the job ended, once the driver is done.
struct ElasticEnd {
  bool success = false;
  int exit_code = 0;
  std::string message;  // "" on success
};

// The elastic driver: decides which workers run where, when the surviving workers re-form
// in a new round, and when the job is over. A pure state machine (no processes, sockets or
// clocks): events come in with the time, decisions go out through ElasticActions.
//
// Workers and slots. Hosts come from discovery (OnHosts) in first-seen order. Each worker
// occupies (host, slot). Free slots on hosts that are not blacklisted get new workers, up to
// --max-np in total, as soon as they are known (not after the running workers reset, as in
// Horovod): new workers start their interpreter and report ready while the others train.
// Before the first round nothing starts until the hosts offer -np slots.
//
// Rounds. A worker is ready when it waits for its next message (it has read every message
// sent). A round is formed when one is needed (first round; a member failed, left or re-init
// by itself; new workers are ready; hosts were removed) and every live member of the current
// round is ready: the ready workers, at most --max-np, get consecutive ranks, survivors first
// (by previous rank, grouped by host: rank 0 stays with the state), then new workers by host
// and slot. The round's members get an Assignment; workers left out get a removal.
//
// Failures. A worker that exits non-zero or by a signal blacklists its host (cooldown per
// HostBlacklist), its host's other workers are drained (removed), and the current round's
// rendezvous is aborted so members stuck in it move on. A worker exiting 0 does not stop the
// others (unlike Horovod, #3852): the job is then finishing, no worker is added, and it ends
// when every worker has exited, successfully if the members of the last round all exited 0.
//
// Host changes. New workers ready to join, or hosts that disappear from discovery, are
// announced (NotifyHosts) so every member raises HostsUpdatedInterrupt at the same commit.
// A host that disappears while healthy is drained: its members are marked leaving and removed
// when the next round forms if the host is still not listed then (a host listed again before
// the members' next commit keeps its workers), it is not blacklisted, and once none of them is
// alive it is released (ReleaseHost). A host that is listed again later, or whose cooldown is over,
// gets workers like a new one.
//
// The job fails when every worker failed, when every host is blacklisted, when fewer than
// --min-np slots are available for --elastic-timeout, when a round would exceed
// --reset-limit resets, or when no member of the previous round survives to hand over the
// state. Not synchronized: one thread drives it.
class ElasticDriver {
 public:
  using TimePoint = ElasticClock::time_point;

  ElasticDriver(ElasticDriverOptions options, ElasticActions* actions);

  // The discovered hosts (or the fixed list); hosts missing from it are gone.
  void OnHosts(const std::vector<discovery::HostSlots>& hosts, TimePoint now);
  // Worker `id` has read `report.cursor` messages and waits for the next; `synced_round` > 0:
  // the last round in which it held the training state (hvd_elastic_synced); `failed_round`
  // the current round: it could not join it, so the round is given up (AbortRound) and its other
  // members stop waiting in its rendezvous at once. Until 2026-12-01 they waited out their
  // rendezvous timeout (30 s) each time, which counted against their own three tries: a member
  // whose init kept failing made every survivor fail and the job end.
  void OnReady(int id, const control::elastic::ReadyReport& report, TimePoint now);
  void OnReady(int id, int64_t cursor, int64_t synced_round, TimePoint now) {
    OnReady(id, {cursor, synced_round, 0}, now);
  }
  void OnReady(int id, int64_t cursor, TimePoint now) { OnReady(id, cursor, 0, now); }
  // Worker `id` ended. `lost`: why its host was lost, when that ended it ("host h2 lost: no
  // sign of life from its hvd-agent for 5 s"); the reason messages give instead of the exit
  // code. `cause`, added to the code: why its host says it was killed (the OOM killer), or the
  // exception a failing Python worker's traceback ends with.
  // `failed_by`: the worker whose shutdown or loss failed this one's collectives (its runtime
  // named that rank, control::ShutdownCauseKey): should that worker then fail on its own, it is
  // the job's first failure in this one's place, as job control's chain does in a static job.
  void OnExit(int id, int wait_status, TimePoint now, const std::string& lost = "",
              const std::string& cause = "", std::optional<int> failed_by = std::nullopt);
  // Worker `id` has ended; OnExit follows with its status once the event loop takes it (it
  // takes the likeliest first failure first, launcher/local/exit_order.h, so an end can wait
  // there while others are taken). Until then the driver does not stop the worker (it is gone:
  // that stop would pass its own failure off as hvdrun's) and knows that a removal sent to it
  // now is never read.
  void OnEnded(int id);
  // Timers: cooldowns, timeouts, removals.
  void OnTick(TimePoint now);
  // When OnTick has something to do next.
  std::optional<TimePoint> NextDeadline() const;

  std::optional<ElasticEnd> end() const { return end_; }
  // Whether a worker has failed (the job's first failure is known).
  bool failure_seen() const { return first_failure_status_.has_value(); }
  // The worker whose failure was the job's first (the one its exit code and message name).
  std::optional<int> first_failure_worker() const { return first_failure_worker_; }
  int64_t round() const { return round_; }
  int reset_count() const { return reset_count_; }
  int live_workers() const;
  // The last round worker `id` was a member of and its rank there; nullopt if it never was.
  std::optional<std::pair<int64_t, int>> RoundAndRankOf(int id) const;
  // The worker (alive or not) that had `rank` in round `round`; nullopt when none is known (a
  // later round gave it another rank).
  std::optional<int> WorkerOfRankIn(int64_t round, int rank) const;
  // The live worker that has `rank` in the current round; nullopt when none has.
  std::optional<int> WorkerOfRank(int rank) const;
  // Whether worker `id` ended because the driver asked it to: it left after it read its
  // removal, or the driver stopped it. A removed worker that fails before it read its removal
  // (or had already ended when it was sent) failed on its own, and is not counted here.
  bool LeftWhenAsked(int id) const;

 private:
  struct Worker {
    int id = 0;
    std::string host;
    int slot = 0;
    bool alive = true;
    bool removed = false;  // told (or to be told) it is not in the job any more
    // A member whose host discovery stopped listing (or shrank): removed when the next round
    // forms, unless its host is back by then (RemoveIneligible).
    bool leaving = false;
    int64_t removal = 0;   // the index of its removal message
    bool failed = false;   // exited non-zero or by a signal on its own
    bool stopped = false;  // the driver terminated it
    bool lost = false;     // its host was lost (OnExit's `lost`)
    bool left = false;     // ended because the driver asked (LeftWhenAsked)
    int64_t sent = 0;      // messages put into its mailbox
    // Once its end was seen (OnEnded): the messages sent until then, the only ones it can have
    // read.
    std::optional<int64_t> sent_when_ended;
    int64_t ready = -1;        // last cursor it reported
    int64_t round = 0;         // last round it was assigned (0 = none)
    int64_t synced_round = 0;  // last round it said it held the state in (0 = never said)
    int rank = -1;             // its rank in that round
    int wait_status = 0;       // once !alive
    TimePoint spawned_at;
    std::optional<TimePoint> terminate_at;
    bool IsReady() const { return alive && ready == sent; }
    // Alive and not seen ending: a worker hvdrun can still stop.
    bool Running() const { return alive && !sent_when_ended; }
  };
  struct Host {
    std::string name;
    int slots = 0;
    int order = 0;  // first-seen order
    bool listed = true;
    bool in_use = false;  // got a worker since it was last released (ReleaseHost)
  };

  // Whether `w` can hand the training state on to a new round: once some worker said it held
  // the state (hvd.elastic.run does after each sync), only workers that did; before, any worker
  // that was in a round (a job whose workers never say so, e.g. C API workers).
  bool HoldsState(const Worker& w) const { return any_synced_ ? w.synced_round > 0 : w.round > 0; }
  void Reconcile(TimePoint now);
  void RemoveIneligible(TimePoint now);
  void ReleaseGoneHosts(TimePoint now);
  // Whether a live worker holds (or may hold) the training state; `staying`: one not leaving at
  // the next reset.
  bool AnyStateHolder(bool staying = false);
  void SpawnFree(TimePoint now);
  void MaybeAnnounceNewWorkers(TimePoint now);
  void MaybeFormRound(TimePoint now);
  // Stops members that have not reached the reset StragglerWait() after others did.
  void StopStragglers(const std::vector<Worker*>& live, TimePoint now);
  ElasticClock::duration StragglerWait() const {
    return options_.elastic_timeout + std::chrono::minutes(1);
  }
  void OrderMembers(std::vector<Worker*>& members) const;
  void FormRound(std::vector<Worker*> members, TimePoint now);
  void Remove(Worker& worker, const std::string& why, TimePoint now);
  bool HostListed(const std::string& name) const;
  // A member whose host discovery no longer lists, kept because the listed hosts offer fewer
  // than --min-np slots (RemoveIneligible, MaybeFormRound).
  bool KeptForMinNp(const Worker& w, TimePoint now) const;
  // Why `w` may not run where it is: its host is gone, blacklisted, or has fewer slots now.
  std::string IneligibleWhy(const Worker& w, TimePoint now) const;
  void Notify(int flags);
  void CheckEnd(TimePoint now);
  // Starts the --elastic-timeout clock (below_min_since_) unless it runs; warns once when the
  // hosts' eligible slots are fewer than `needed` (`flag`: "-np" or "--min-np").
  void StartWaiting(TimePoint now, int needed, const char* flag);
  void EndWithoutWorkers(TimePoint now);
  void Finish(bool success, int exit_code, std::string message);
  bool Eligible(const Worker& worker, TimePoint now) const;
  int EligibleSlots(TimePoint now) const;
  std::vector<Worker*> Live();
  bool IsMember(const Worker& worker) const;
  std::set<std::string> HostsOf(const std::set<int>& ids) const;
  int FailureCode() const;

  ElasticDriverOptions options_;
  ElasticActions* actions_;
  discovery::HostBlacklist blacklist_;
  std::vector<Host> hosts_;  // first-seen order; never shrinks (listed = false when gone)
  std::map<int, Worker> workers_;
  int next_id_ = 0;
  int64_t round_ = 0;
  int64_t aborted_round_ = 0;  // the last round OnReady gave up on (a member could not join)
  std::set<int> members_;      // ids in the current round
  bool reset_needed_ = false;
  int reset_count_ = 0;
  int64_t hosts_timestamp_ = 0;
  int hosts_flags_ = 0;  // accumulated since the current round formed
  bool announced_new_ = false;
  bool any_synced_ = false;                // some worker reported a synced round
  bool finishing_ = false;                 // a worker exited 0
  bool finishing_below_min_said_ = false;  // the warning of a finishing job below --min-np
  bool ending_ = false;  // nobody holds the state: the job ends once the workers are gone
  // Members on hosts discovery no longer lists are kept, as the listed ones offer fewer than
  // --min-np slots (RemoveIneligible); the --elastic-timeout clock runs meanwhile.
  bool keeping_gone_members_ = false;
  std::optional<int> first_failure_status_;
  std::string first_failure_;  // "worker 3 on h2: exit code 1"
  std::optional<int> first_failure_worker_;
  // The worker that first_failure_worker_'s runtime named as the one that failed it (OnExit's
  // failed_by), while it has not ended.
  std::optional<int> first_failure_failed_by_;
  std::optional<TimePoint> below_min_since_;
  std::optional<TimePoint> pending_ready_since_;
  // Since when some members have waited at a reset for others (StopStragglers).
  std::optional<TimePoint> reset_waiting_since_;
  std::optional<ElasticEnd> end_;
  TimePoint last_now_{};
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_ELASTIC_ELASTIC_DRIVER_H_
