// The elastic driver's rounds (ElasticDriver, elastic_driver.h): when one forms, who is in it
// and with which ranks, and the members that never reach a reset. Split from elastic_driver.cc,
// which has the events, the hosts and the workers' ends.
#include <algorithm>
#include <climits>
#include <tuple>

#include "common/duration.h"
#include "launcher/elastic/elastic_driver.h"

namespace hvd::launcher {
namespace {

namespace elastic = control::elastic;

// Rank, size, local and cross rank and size of members on `hosts` (one entry per member,
// in rank order; a host's members are adjacent), as PlanRanks numbers them.
std::vector<elastic::Assignment> Layout(const std::vector<std::string>& hosts) {
  std::vector<std::pair<std::string, int>> blocks;  // host, members
  for (const std::string& host : hosts) {
    if (blocks.empty() || blocks.back().first != host) blocks.emplace_back(host, 0);
    ++blocks.back().second;
  }
  std::vector<elastic::Assignment> layout;
  for (size_t b = 0; b < blocks.size(); ++b) {
    for (int l = 0; l < blocks[b].second; ++l) {
      elastic::Assignment a;
      a.rank = static_cast<int32_t>(layout.size());
      a.size = static_cast<int32_t>(hosts.size());
      a.local_rank = l;
      a.local_size = blocks[b].second;
      a.cross_rank = 0;
      a.cross_size = 0;
      for (size_t c = 0; c < blocks.size(); ++c) {
        if (blocks[c].second <= l) continue;
        if (c < b) ++a.cross_rank;
        ++a.cross_size;
      }
      a.host = blocks[b].first;
      layout.push_back(a);
    }
  }
  return layout;
}

// "0-1 on localhost, 2 on 127.0.0.1"
std::string DescribeLayout(const std::vector<elastic::Assignment>& layout) {
  std::string text;
  for (const elastic::Assignment& a : layout) {
    if (a.local_rank != 0) continue;
    text += (text.empty() ? "" : ", ") + std::to_string(a.rank) +
            (a.local_size > 1 ? "-" + std::to_string(a.rank + a.local_size - 1) : "") + " on " +
            a.host;
  }
  return text;
}

}  // namespace

void ElasticDriver::MaybeFormRound(TimePoint now) {
  std::vector<Worker*> live = Live();
  if (live.empty()) return;
  if (round_ > 0) {
    if (!reset_needed_) return;
    // Members marked leaving (RemoveIneligible) go now, ready or not, unless their host is back
    // or the others could not run without them (--min-np), as when they were marked; those that
    // stay are waited for as any member. Those that go read their removal at their next init,
    // or are stopped the grace period after the round forms.
    auto goes = [&](const Worker& w) {
      return w.leaving && !Eligible(w, now) && !KeptForMinNp(w, now);
    };
    bool any_ready = false, all_ready = true;
    for (Worker* w : live) {
      if (!IsMember(*w) || goes(*w)) continue;
      if (w->IsReady()) {
        any_ready = true;
      } else {
        all_ready = false;
      }
    }
    if (!all_ready) {  // still training (at most until their next commit), or stuck
      if (any_ready) StopStragglers(live, now);
      return;
    }
    bool removed = false;
    for (Worker* w : live) {
      if (w->leaving && goes(*w)) {
        Remove(*w, IneligibleWhy(*w, now), now);
        removed = true;
      }
      w->leaving = false;
    }
    if (removed) live = Live();
  } else {
    bool all_ready = std::all_of(live.begin(), live.end(), [](Worker* w) { return w->IsReady(); });
    TimePoint first = live.front()->spawned_at;
    for (Worker* w : live) first = std::min(first, w->spawned_at);
    if (!all_ready && now - first < options_.start_timeout) return;
  }
  std::vector<Worker*> ready;
  for (Worker* w : live) {
    if (w->IsReady()) ready.push_back(w);
  }
  // A finishing job (a worker exited 0) adds no one, so waiting for --min-np could only time
  // out (--elastic-timeout, 600 s by default, then exit 124 with the survivors idle): the
  // survivors re-form as they are and finish.
  if (static_cast<int>(ready.size()) < options_.min_np) {
    if (!(finishing_ && round_ > 0)) {
      StartWaiting(now, options_.min_np, "--min-np");
      return;
    }
    if (!finishing_below_min_said_) {
      finishing_below_min_said_ = true;
      actions_->Warn(std::to_string(ready.size()) + " worker(s) left, fewer than --min-np " +
                     std::to_string(options_.min_np) +
                     ": they go on without waiting, as the job is finishing (a worker exited 0) "
                     "and takes no new workers");
    }
  }
  below_min_since_.reset();
  if (round_ > 0) {
    // A joiner that never received the state is no survivor: re-forming around it would restart
    // training from its initial state, silently.
    bool survivor =
        std::any_of(ready.begin(), ready.end(), [&](Worker* w) { return HoldsState(*w); });
    if (!survivor) return;  // CheckEnd ends the job
    if (options_.reset_limit && reset_count_ >= *options_.reset_limit) {
      return Finish(false, FailureCode(),
                    "Horovod was shutdown because number of resets during elastic job exceeded "
                    "limit: " +
                        std::to_string(*options_.reset_limit));
    }
  }
  FormRound(std::move(ready), now);
}

void ElasticDriver::StopStragglers(const std::vector<Worker*>& live, TimePoint now) {
  // Some members wait at the reset for others that have not reached it. A member that never
  // does (hung in a collective that cannot fail, or in user code) would hold the job forever:
  // the waiting workers' own wait has no bound (runtime/elastic_session.cc), so after
  // --elastic-timeout plus a minute (StragglerWait: a small --elastic-timeout, meant for slots,
  // must not stop a member that is merely slow to unwind) the stragglers are stopped, and the
  // others re-form without them (their slots get new workers). Until 2026-12-01 the waiting
  // workers instead gave up after that time, exited 1, and got their own healthy hosts
  // blacklisted.
  if (!reset_waiting_since_) reset_waiting_since_ = now;
  if (now - *reset_waiting_since_ < StragglerWait()) return;
  for (Worker* w : live) {
    if (!IsMember(*w) || w->IsReady() || !w->Running() || w->stopped) continue;
    actions_->Warn("worker " + std::to_string(w->id) + " (rank " + std::to_string(w->rank) +
                   ") on " + w->host + " did not reach round " + std::to_string(round_) +
                   "'s reset within " + SecondsText(StragglerWait()) +
                   " (--elastic-timeout plus a minute) while the others waited: stopping it");
    w->stopped = true;
    actions_->Terminate(w->id);
  }
}

void ElasticDriver::OrderMembers(std::vector<Worker*>& members) const {
  // Hosts with survivors first, by their lowest previous rank (rank 0 keeps the state); then
  // hosts of new workers in first-seen order. Within a host: survivors by rank, then slots.
  auto host_order = [&](const std::string& host) {
    int best = INT_MAX;
    for (Worker* w : members) {
      if (w->host == host && w->round > 0) best = std::min(best, w->rank);
    }
    int seen = 0;
    for (const Host& h : hosts_) {
      if (h.name == host) seen = h.order;
    }
    return std::make_pair(best, seen);
  };
  auto key = [&](const Worker* w) {
    return std::make_tuple(host_order(w->host), w->round > 0 ? 0 : 1,
                           w->round > 0 ? w->rank : w->slot);
  };
  std::sort(members.begin(), members.end(),
            [&](const Worker* a, const Worker* b) { return key(a) < key(b); });
}

void ElasticDriver::FormRound(std::vector<Worker*> members, TimePoint now) {
  OrderMembers(members);
  // More ready workers than --max-np (new workers started beside members that were leaving but
  // stayed, their host listed again): the last, new ones, are let go. Left waiting, they were
  // announced again and cut again at every reset, without end.
  if (options_.max_np && static_cast<int>(members.size()) > *options_.max_np) {
    for (size_t i = static_cast<size_t>(*options_.max_np); i < members.size(); ++i) {
      Remove(*members[i],
             "the job already has --max-np " + std::to_string(*options_.max_np) + " workers", now);
    }
    members.resize(static_cast<size_t>(*options_.max_np));
  }
  if (round_ > 0) {
    ++reset_count_;
    actions_->AbortRound(round_);
  }
  ++round_;
  std::vector<std::string> hosts;
  for (Worker* w : members) hosts.push_back(w->host);
  std::vector<elastic::Assignment> layout = Layout(hosts);
  // A member without the state (a new worker, or one whose first round failed before its sync)
  // makes this round sync: `joined` tells the holders not to skip it. Until 2026-12-01 it was
  // a member never assigned a round, so a round after an aborted one with a joiner said
  // false and the holders skipped the sync the joiner waited in (Horovod's #3494 deadlock).
  const bool joined =
      std::any_of(members.begin(), members.end(), [this](Worker* w) { return !HoldsState(*w); });
  for (size_t i = 0; i < members.size(); ++i) {
    Worker* w = members[i];
    elastic::Message message;
    message.assignment = layout[i];
    message.assignment.round = round_;
    message.assignment.joined = joined;
    message.assignment.hosts_timestamp = hosts_timestamp_;
    actions_->Send(w->id, ++w->sent, message);
    w->round = round_;
    w->rank = static_cast<int>(i);
  }
  members_.clear();
  for (Worker* w : members) members_.insert(w->id);
  reset_needed_ = false;
  announced_new_ = false;
  pending_ready_since_.reset();
  reset_waiting_since_.reset();
  hosts_flags_ = 0;
  for (auto& [id, w] : workers_) {
    if (w.alive && w.removed && !w.terminate_at) w.terminate_at = now + options_.grace_period;
  }
  actions_->Step("round " + std::to_string(round_) + ": " + std::to_string(members.size()) +
                 " ranks (" + DescribeLayout(layout) + ")" +
                 (round_ > 1 ? "; reset " + std::to_string(reset_count_) : ""));
}

}  // namespace hvd::launcher
