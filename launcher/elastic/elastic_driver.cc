#include "launcher/elastic/elastic_driver.h"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <sys/wait.h>

#include <algorithm>
#include <climits>

#include "common/duration.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/wait_status.h"

namespace hvd::launcher {
namespace {

namespace elastic = control::elastic;

// " (blacklisted: a, b)", or "" when no host is.
std::string BlacklistedNote(const std::vector<std::string>& blacklisted) {
  if (blacklisted.empty()) return "";
  return " (blacklisted: " + fmt::to_string(fmt::join(blacklisted, ", ")) + ")";
}

}  // namespace

ElasticDriver::ElasticDriver(ElasticDriverOptions options, ElasticActions* actions)
    : options_(std::move(options)),
      actions_(actions),
      blacklist_(options_.cooldown_range_s, options_.seed) {}

int ElasticDriver::live_workers() const {
  int n = 0;
  for (const auto& [id, w] : workers_) n += w.alive ? 1 : 0;
  return n;
}

bool ElasticDriver::LeftWhenAsked(int id) const {
  auto it = workers_.find(id);
  return it != workers_.end() && !it->second.alive && it->second.left;
}

std::optional<std::pair<int64_t, int>> ElasticDriver::RoundAndRankOf(int id) const {
  auto it = workers_.find(id);
  if (it == workers_.end() || it->second.round == 0) return std::nullopt;
  return std::make_pair(it->second.round, it->second.rank);
}

std::optional<int> ElasticDriver::WorkerOfRankIn(int64_t round, int rank) const {
  for (const auto& [id, w] : workers_) {
    if (round > 0 && w.round == round && w.rank == rank) return id;
  }
  return std::nullopt;
}

std::optional<int> ElasticDriver::WorkerOfRank(int rank) const {
  for (const auto& [id, w] : workers_) {
    if (w.alive && !w.removed && w.round == round_ && round_ > 0 && w.rank == rank) return id;
  }
  return std::nullopt;
}

std::set<std::string> ElasticDriver::HostsOf(const std::set<int>& ids) const {
  std::set<std::string> hosts;
  for (int id : ids) hosts.insert(workers_.at(id).host);
  return hosts;
}

bool ElasticDriver::IsMember(const Worker& w) const {
  return round_ > 0 && w.round == round_ && members_.count(w.id) > 0;
}

bool ElasticDriver::Eligible(const Worker& w, TimePoint now) const {
  for (const Host& h : hosts_) {
    if (h.name == w.host) return h.listed && w.slot < h.slots && !blacklist_.Contains(h.name, now);
  }
  return false;
}

int ElasticDriver::EligibleSlots(TimePoint now) const {
  int slots = 0;
  for (const Host& h : hosts_) {
    if (h.listed && !blacklist_.Contains(h.name, now)) slots += h.slots;
  }
  return slots;
}

std::vector<ElasticDriver::Worker*> ElasticDriver::Live() {
  std::vector<Worker*> live;
  for (auto& [id, w] : workers_) {
    if (w.alive && !w.removed) live.push_back(&w);
  }
  return live;
}

int ElasticDriver::FailureCode() const {
  if (!first_failure_status_) return 1;
  int status = *first_failure_status_;
  if (WIFEXITED(status)) return WEXITSTATUS(status) != 0 ? WEXITSTATUS(status) : 1;
  if (WIFSIGNALED(status)) return kExitSignalBase + WTERMSIG(status);
  return 1;
}

void ElasticDriver::OnHosts(const std::vector<discovery::HostSlots>& hosts, TimePoint now) {
  if (end_) return;
  std::set<std::string> listed;
  for (const discovery::HostSlots& item : hosts) {
    listed.insert(item.host);
    auto it = std::find_if(hosts_.begin(), hosts_.end(),
                           [&](const Host& h) { return h.name == item.host; });
    if (it == hosts_.end()) {
      hosts_.push_back({item.host, item.slots, static_cast<int>(hosts_.size()), true});
      actions_->Step("host " + item.host + " with " + std::to_string(item.slots) +
                     " slot(s) is available");
    } else if (!it->listed || it->slots != item.slots) {
      actions_->Step("host " + item.host + " has " + std::to_string(item.slots) + " slot(s)");
      it->listed = true;
      it->slots = item.slots;
    }
  }
  for (Host& h : hosts_) {
    if (h.listed && listed.count(h.name) == 0) {
      h.listed = false;
      actions_->Step("host " + h.name + " is no longer available");
    }
  }
  Reconcile(now);
}

void ElasticDriver::OnReady(int id, const elastic::ReadyReport& report, TimePoint now) {
  auto it = workers_.find(id);
  if (end_ || it == workers_.end() || !it->second.alive) return;
  Worker& w = it->second;
  w.ready = report.cursor;
  if (report.synced_round > 0) {
    w.synced_round = std::max(w.synced_round, report.synced_round);
    any_synced_ = true;
  }
  const bool member_ready = w.IsReady() && IsMember(w);
  const std::string who = "worker " + std::to_string(id) + " (rank " + std::to_string(w.rank) + ")";
  if (member_ready && report.failed_round == round_ && aborted_round_ != round_) {
    // Given up at once. Not so for a member that leaves a formed round by itself (a host
    // change's reset): the others may still be in that round's last collectives, and they follow
    // at their next commit.
    actions_->Step(who + " could not join round " + std::to_string(round_) +
                   ": the round is given up and the others re-form");
    aborted_round_ = round_;
    reset_needed_ = true;
    actions_->AbortRound(round_);
  } else if (member_ready && !reset_needed_) {
    actions_->Step(who + " left round " + std::to_string(round_) + "; the others re-form");
    reset_needed_ = true;
  }
  Reconcile(now);
}

void ElasticDriver::OnExit(int id, int wait_status, TimePoint now, const std::string& lost,
                           const std::string& cause, std::optional<int> failed_by) {
  auto it = workers_.find(id);
  if (it == workers_.end() || !it->second.alive) return;
  Worker& w = it->second;
  const bool member = IsMember(w);
  w.alive = false;
  w.wait_status = wait_status;
  w.lost = !lost.empty();
  const std::string how = w.lost ? lost : DescribeWaitStatus(wait_status, cause);
  const std::string who = "worker " + std::to_string(id) +
                          (w.round > 0 ? " (rank " + std::to_string(w.rank) + " of round " +
                                             std::to_string(w.round) + ")"
                                       : "") +
                          " on " + w.host;
  if (end_) return;
  // A removed worker that exits after reading its removal just leaves; one that fails before
  // (it had not re-initialized since, or had already ended when the removal was sent) failed on
  // its own.
  const bool read_removal = w.removed && w.ready >= w.removal - 1 &&
                            (!w.sent_when_ended || w.removal <= *w.sent_when_ended);
  w.left = read_removal || w.stopped;
  w.failed = !WaitStatusIsSuccess(wait_status) && !w.left;
  if (w.failed && failed_by == id) failed_by.reset();
  // The first failure; or, when the first failure's collectives failed on this worker's exit or
  // loss and it has now failed on its own, this one in its place (a chain of them: follow it).
  if (w.failed && (!first_failure_status_ || first_failure_failed_by_ == id)) {
    const std::string instead = first_failure_worker_ ? " (its end failed worker " +
                                                            std::to_string(*first_failure_worker_) +
                                                            ", which ended first)"
                                                      : "";
    first_failure_status_ = wait_status;
    first_failure_ = who + ": " + how + instead;
    first_failure_worker_ = id;
    first_failure_failed_by_ = failed_by;
  }
  if (w.removed || w.stopped) {
    // Its host is already blacklisted, gone or smaller: nothing more to drain.
    actions_->Step(w.failed ? who + " failed after its removal was sent: " + how
                            : who + " left the job: " + DescribeWaitStatus(wait_status));
  } else if (WaitStatusIsSuccess(wait_status)) {
    if (!finishing_) {
      actions_->Step(who +
                     " exited 0: the job is finishing; the other workers go on, none is "
                     "added");
    }
    finishing_ = true;
  } else {
    std::optional<ElasticClock::duration> cooldown = blacklist_.Add(w.host, now);
    actions_->Warn(who + " failed: " + how + "; host " + w.host + " is blacklisted " +
                   (cooldown ? "for " + SecondsText(*cooldown) : std::string("for good")));
    bool member_removed = false;
    for (auto& [other_id, other] : workers_) {
      if (other.alive && !other.removed && other.host == w.host) {
        member_removed |= IsMember(other);
        Remove(other, "host " + w.host + " is blacklisted after " + who + " failed", now);
      }
    }
    // A worker that never joined failed (a new one): its host's members are removed, and they
    // learn it as from discovery, at the members' next commit. Until 2026-11-30 nothing told
    // them: they trained on the blacklisted host, and no round formed without it.
    if (member_removed && !member) Notify(elastic::kHostsRemoved);
  }
  if (member) {
    reset_needed_ = true;
    aborted_round_ = round_;
    actions_->AbortRound(round_);  // members still in its rendezvous move on at once
  }
  Reconcile(now);
}

void ElasticDriver::OnEnded(int id) {
  auto it = workers_.find(id);
  if (it == workers_.end() || !it->second.Running()) return;
  it->second.sent_when_ended = it->second.sent;
}

void ElasticDriver::OnTick(TimePoint now) {
  if (end_) return;
  for (auto& [id, w] : workers_) {
    if (w.Running() && w.terminate_at && *w.terminate_at <= now) {
      w.terminate_at.reset();
      w.stopped = true;
      actions_->Step("stopping worker " + std::to_string(id) + ": it is not needed any more");
      actions_->Terminate(id);
    }
  }
  Reconcile(now);
}

std::optional<ElasticDriver::TimePoint> ElasticDriver::NextDeadline() const {
  std::optional<TimePoint> next;
  // A deadline the last Reconcile already saw pass (it acted, or could not act: fewer than
  // --min-np workers ready at the start timeout) is no reason to wake again: the next event
  // (a report, an exit, a discovery poll) or a later deadline is. Until 2026-11-30 such a
  // deadline stayed the next one, and hvdrun's loop polled without waiting (a core at 100 %)
  // until the first round formed.
  auto consider = [&](std::optional<TimePoint> t) {
    if (t && *t > last_now_ && (!next || *t < *next)) next = t;
  };
  if (end_) return next;
  for (const auto& [id, w] : workers_) {
    if (w.Running()) consider(w.terminate_at);
  }
  consider(blacklist_.NextExpiry(last_now_));
  if (below_min_since_) consider(*below_min_since_ + options_.elastic_timeout);
  if (reset_waiting_since_) consider(*reset_waiting_since_ + StragglerWait());
  if (pending_ready_since_ && !announced_new_) {
    consider(*pending_ready_since_ + options_.start_timeout);
  }
  if (round_ == 0) {
    for (const auto& [id, w] : workers_) {
      if (w.alive) consider(w.spawned_at + options_.start_timeout);
    }
  }
  return next;
}

void ElasticDriver::Reconcile(TimePoint now) {
  last_now_ = now;
  if (end_) return;
  RemoveIneligible(now);
  ReleaseGoneHosts(now);
  SpawnFree(now);
  MaybeAnnounceNewWorkers(now);
  MaybeFormRound(now);
  CheckEnd(now);
}

void ElasticDriver::ReleaseGoneHosts(TimePoint now) {
  for (Host& h : hosts_) {
    const bool for_good = !options_.cooldown_range_s && blacklist_.Contains(h.name, now);
    if (!h.in_use || (h.listed && !for_good)) continue;
    const bool busy = std::any_of(workers_.begin(), workers_.end(), [&](const auto& entry) {
      return entry.second.alive && entry.second.host == h.name;
    });
    if (busy) continue;
    h.in_use = false;
    actions_->Step("host " + h.name + " has left the job: none of its workers is left");
    actions_->ReleaseHost(h.name);
  }
}

void ElasticDriver::RemoveIneligible(TimePoint now) {
  // Members on hosts that discovery stopped listing stay while the listed hosts cannot hold
  // --min-np workers: removing them could not let a round form, and would lose the training
  // state when they hold it all (a discovery script that printed no host for one poll ended the
  // job until 2026-12-01). They keep training; when the hosts are listed again nothing happened,
  // when enough other slots appear they are removed then, and after --elastic-timeout the job
  // ends as any job below --min-np does. Horovod gets there by waiting for --min-np slots in
  // its reset (wait_for_available_slots) while its workers wait in the rendezvous.
  //
  // A member whose host discovery stopped listing (or lists with fewer slots) while the others
  // can go on without it leaves at the next reset, not at once: it is marked `leaving`, every
  // member is told (HostsUpdatedInterrupt at the same commit), and only when that round forms
  // is it removed, if its host is still not listed then (MaybeFormRound). A host missing for a
  // poll or two, listed again before the members' next commit, thus keeps its workers, as in
  // Horovod, which decides membership at the reset;
  // until 2026-12-01 they were removed at that poll, and the host, listed again, got new
  // workers beside the leaving ones (two resets, the workers restarted).
  bool member_leaving = false, member_kept = false;
  for (auto& [id, w] : workers_) {
    if (!w.alive || w.removed || Eligible(w, now)) continue;
    const bool blacklisted = blacklist_.Contains(w.host, now);
    if (!blacklisted && IsMember(w)) {
      if (KeptForMinNp(w, now)) {
        member_kept = true;
      } else if (!w.leaving) {
        w.leaving = true;
        member_leaving = true;
        actions_->Step("worker " + std::to_string(w.id) + " (rank " + std::to_string(w.rank) +
                       ") leaves at the next reset: " + IneligibleWhy(w, now));
      }
      continue;
    }
    Remove(w, IneligibleWhy(w, now), now);
  }
  // One announcement for all of them: every member raises HostsUpdatedInterrupt at the same
  // commit; the leaving ones are then removed (FormRound), the others re-form.
  if (member_leaving) {
    reset_needed_ = true;
    Notify(elastic::kHostsRemoved);
  }
  if (member_kept && !keeping_gone_members_) {
    keeping_gone_members_ = true;
    actions_->Step(
        "the workers on hosts no longer listed go on: without them fewer than --min-np " +
        std::to_string(options_.min_np) + " could run");
    StartWaiting(now, options_.min_np, "--min-np");
  } else if (!member_kept && keeping_gone_members_) {
    keeping_gone_members_ = false;
    // The hosts are back (or others can take the gone hosts' place, removed above): the clock
    // started for them stops, unless a reset is waiting for --min-np on its own.
    if (!reset_needed_) below_min_since_.reset();
  }
}

bool ElasticDriver::KeptForMinNp(const Worker& w, TimePoint now) const {
  return round_ > 0 && !finishing_ && !HostListed(w.host) && EligibleSlots(now) < options_.min_np;
}

bool ElasticDriver::HostListed(const std::string& name) const {
  return std::any_of(hosts_.begin(), hosts_.end(),
                     [&](const Host& h) { return h.name == name && h.listed; });
}

std::string ElasticDriver::IneligibleWhy(const Worker& w, TimePoint now) const {
  auto host = std::find_if(hosts_.begin(), hosts_.end(),
                           [&name = w.host](const Host& h) { return h.name == name; });
  if (host == hosts_.end() || !host->listed) return "host " + w.host + " is no longer available";
  if (blacklist_.Contains(w.host, now)) return "host " + w.host + " is blacklisted";
  return "host " + w.host + " now has " + std::to_string(host->slots) + " slot(s)";
}

void ElasticDriver::Remove(Worker& w, const std::string& why, TimePoint now) {
  w.removed = true;
  elastic::Message message;
  message.removed = true;
  message.reason = why;
  actions_->Send(w.id, ++w.sent, message);
  w.removal = w.sent;
  actions_->Step("removing worker " + std::to_string(w.id) + " from the job: " + why);
  if (IsMember(w)) {
    reset_needed_ = true;
  } else {
    w.terminate_at = now + options_.grace_period;  // it never joined; it just has to go
  }
}

void ElasticDriver::Notify(int flags) {
  ++hosts_timestamp_;
  hosts_flags_ |= flags;
  actions_->NotifyHosts(hosts_timestamp_, hosts_flags_);
}

bool ElasticDriver::AnyStateHolder(bool staying) {
  // A member still in the round may hold the state (its sync is only reported when it is ready
  // again).
  std::vector<Worker*> live = Live();
  return std::any_of(live.begin(), live.end(), [&](Worker* w) {
    if (staying && w->leaving) return false;
    return HoldsState(*w) || (IsMember(*w) && !w->IsReady()) || round_ == 0;
  });
}

void ElasticDriver::SpawnFree(TimePoint now) {
  // Once no live worker holds the training state (every host of the round was lost), a new
  // worker could never be handed it: CheckEnd ends the job instead.
  // A holder leaving at the next reset does not count: a worker started now could not be
  // handed the state by it.
  if (finishing_ || ending_ || (round_ > 0 && !AnyStateHolder(/*staying=*/true))) return;
  const int eligible = EligibleSlots(now);
  if (workers_.empty() && eligible < options_.start_np) {
    StartWaiting(now, options_.start_np, "-np");
    return;
  }
  std::vector<Worker*> live = Live();
  const int cap = options_.max_np.value_or(INT_MAX);
  const int planned = std::min(cap, eligible);
  // Members leaving at the next reset keep their slots (their hosts may be listed again by
  // then) but are not counted as staying: the new workers' first rank and size (what their
  // environment says before their first init) stay within the planned size.
  int count = static_cast<int>(
      std::count_if(live.begin(), live.end(), [](const Worker* w) { return !w->leaving; }));
  for (Host& h : hosts_) {
    if (!h.listed || blacklist_.Contains(h.name, now)) continue;
    for (int slot = 0; slot < h.slots && count < cap; ++slot) {
      bool taken = std::any_of(live.begin(), live.end(), [&](const Worker* w) {
        return w->host == h.name && w->slot == slot;
      });
      if (taken) continue;
      Worker w;
      w.id = next_id_++;
      w.host = h.name;
      w.slot = slot;
      w.spawned_at = now;
      auto [it, inserted] = workers_.emplace(w.id, w);
      live.push_back(&it->second);
      h.in_use = true;
      if (round_ == 0) below_min_since_.reset();
      actions_->Step("starting worker " + std::to_string(w.id) + " on " + h.name + " (slot " +
                     std::to_string(slot) + ")");
      actions_->Spawn(w.id, h.name, slot, h.slots, count, std::max(planned, count + 1));
      ++count;
    }
  }
}

void ElasticDriver::MaybeAnnounceNewWorkers(TimePoint now) {
  if (round_ > 0 && finishing_) {
    // A finishing job takes no one in: workers that never joined are let go.
    for (Worker* w : Live()) {
      if (w->round == 0) Remove(*w, "the job is finishing (a worker exited 0)", now);
    }
    return;
  }
  if (round_ == 0 || announced_new_) return;
  size_t pending = 0, ready = 0;
  for (Worker* w : Live()) {
    if (w->round != 0) continue;
    ++pending;
    if (w->IsReady()) ++ready;
  }
  if (ready == 0) {
    pending_ready_since_.reset();
    return;
  }
  if (!pending_ready_since_) pending_ready_since_ = now;
  if (ready < pending && now - *pending_ready_since_ < options_.start_timeout) return;
  actions_->Step(std::to_string(ready) + " new worker(s) ready: announcing the host change");
  Notify(elastic::kHostsAdded);
  announced_new_ = true;
  reset_needed_ = true;
}

void ElasticDriver::StartWaiting(TimePoint now, int needed, const char* flag) {
  if (below_min_since_) return;
  below_min_since_ = now;
  // Said at once, not only when --elastic-timeout (600 s by default) runs out: a job whose
  // --min-np is its -np (the default) cannot lose a host, and used to sit silent that long.
  // Not while enough slots are left and their workers are still starting.
  const int slots = EligibleSlots(now);
  if (slots >= needed) return;
  std::vector<std::string> blacklisted = blacklist_.Hosts(now);
  actions_->Warn("only " + std::to_string(slots) + (slots == 1 ? " worker" : " workers") +
                 " can run, fewer than " + flag + " " + std::to_string(needed) +
                 BlacklistedNote(blacklisted) + "; waiting up to " +
                 SecondsText(options_.elastic_timeout) + " (--elastic-timeout) for hosts" +
                 (options_.min_np == options_.start_np && round_ > 0
                      ? " (--min-np is -np here, its default: a lower --min-np lets the job go "
                        "on without the lost workers)"
                      : ""));
}

void ElasticDriver::CheckEnd(TimePoint now) {
  if (end_) return;
  const bool timed_out = below_min_since_ && now - *below_min_since_ >= options_.elastic_timeout;
  if (workers_.empty()) {
    if (timed_out) {
      Finish(false, kExitTimeout,
             "timed out after " + SecondsText(options_.elastic_timeout) +
                 " (--elastic-timeout) waiting for " + std::to_string(options_.start_np) +
                 " slots (-np) to start: the hosts offer " + std::to_string(EligibleSlots(now)));
    }
    return;
  }
  std::vector<Worker*> live = Live();
  const bool holder = AnyStateHolder();
  if (!holder && !(round_ == 0 && !finishing_ && EligibleSlots(now) > 0)) {
    // Nobody holds the training state any more (or, before the first round, nobody can
    // start): once every worker is gone, say why the job ends.
    ending_ = true;
    for (auto& [id, w] : workers_) {
      if (w.alive && !w.terminate_at) w.terminate_at = now + options_.grace_period;
    }
    if (live_workers() == 0) EndWithoutWorkers(now);
    return;
  }
  if (timed_out) {
    std::vector<std::string> blacklisted = blacklist_.Hosts(now);
    const int can_run = std::min<int>(EligibleSlots(now), static_cast<int>(live.size()));
    // Enough workers alive but not all ready: name those the round waited for (a worker stuck
    // before hvd.init(), or in its reset callback), where the message said only that too few
    // could run (until 2026-12-01: "only 4 workers can run, fewer than --min-np 4").
    std::string waiting;
    int not_ready = 0;
    for (Worker* w : live) {
      if (w->IsReady() || w->removed) continue;
      if (++not_ready <= 8) {
        waiting += (waiting.empty() ? "" : ", ") + std::string("worker ") + std::to_string(w->id) +
                   " on " + w->host;
      }
    }
    if (not_ready > 8) waiting += " and " + std::to_string(not_ready - 8) + " more";
    const std::string why =
        can_run >= options_.min_np && not_ready > 0
            ? std::to_string(can_run) + " workers are alive, but " + std::to_string(not_ready) +
                  " never became ready for the next round (" + waiting +
                  "): stuck before hvd.init(), in a reset callback, or between commits"
            : "only " + std::to_string(can_run) + (can_run == 1 ? " worker" : " workers") +
                  " can run, fewer than --min-np " + std::to_string(options_.min_np);
    Finish(false, kExitTimeout,
           "Timed out waiting for the minimum number of slots: after " +
               SecondsText(options_.elastic_timeout) + " (--elastic-timeout) " + why +
               BlacklistedNote(blacklisted));
  }
}

void ElasticDriver::EndWithoutWorkers(TimePoint now) {
  bool members_succeeded = !members_.empty();
  bool members_failed = !members_.empty();
  for (int id : members_) {
    members_succeeded &= WaitStatusIsSuccess(workers_.at(id).wait_status);
    members_failed &= workers_.at(id).failed;
  }
  if (finishing_ && members_succeeded) return Finish(true, kExitOk, "");
  // No round ever formed (workers that never called hvd.init) and none failed: a success, as
  // for a job of plain processes (it read "not every worker of round 0 exited 0; the first
  // failure: " with nothing after it).
  if (finishing_ && members_.empty() && first_failure_.empty()) return Finish(true, kExitOk, "");
  if (finishing_) {
    return Finish(false, FailureCode(),
                  "the job was finishing, but not every worker" +
                      (round_ > 0 ? " of round " + std::to_string(round_) : std::string()) +
                      " exited 0; the first failure: " + first_failure_);
  }
  if (members_failed || round_ == 0) {
    const std::string of_round =
        round_ > 0 ? "round " + std::to_string(round_) : std::string("the job");
    std::set<std::string> lost;
    for (int id : members_) {
      if (workers_.at(id).lost) lost.insert(workers_.at(id).host);
    }
    if (round_ > 0 && !lost.empty() && lost.size() == HostsOf(members_).size()) {
      return Finish(false, FailureCode(),
                    "every host of " + of_round + " was lost (" +
                        fmt::to_string(fmt::join(lost, ", ")) +
                        "): no worker is left to go on; the first: " + first_failure_);
    }
    return Finish(false, FailureCode(),
                  "every worker of " + of_round + " failed; the first failure: " + first_failure_);
  }
  // Listed hosts only: a blacklisted host that discovery no longer lists does not make the
  // ones it lists unusable (blacklisted {a, c}, listed {a, d}: d is usable).
  std::vector<std::string> listed, listed_blacklisted;
  for (const Host& h : hosts_) {
    if (!h.listed) continue;
    listed.push_back(h.name);
    if (blacklist_.Contains(h.name, now)) listed_blacklisted.push_back(h.name);
  }
  if (!listed.empty() && listed_blacklisted.size() == listed.size()) {
    return Finish(false, FailureCode(),
                  "all hosts are blacklisted (" +
                      fmt::to_string(fmt::join(listed_blacklisted, ", ")) +
                      "): no host is left to run workers on; the first failure: " + first_failure_);
  }
  // Workers of the round that joined it but never received the state (any_synced_) are no
  // holders either.
  Finish(false, FailureCode(),
         "No hosts from previous set remaining, unable to broadcast state: no worker " +
             std::string(any_synced_ ? "holding the training state (of round " +
                                           std::to_string(round_) + " or before)"
                                     : "of round " + std::to_string(round_)) +
             " is left to hand it over" +
             (first_failure_.empty() ? "" : "; the first failure: " + first_failure_));
}

void ElasticDriver::Finish(bool success, int exit_code, std::string message) {
  end_ = ElasticEnd{success, exit_code, std::move(message)};
  for (auto& [id, w] : workers_) {
    if (w.Running()) actions_->Terminate(id);
  }
}

}  // namespace hvd::launcher
