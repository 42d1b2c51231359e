#include "runtime/core/negotiation/controller.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <bit>
#include <cstring>

#include "common/logging.h"
#include "runtime/transports/reduction.h"

namespace hvd::runtime {
namespace {

// Inverted status flags of the AND round (set = "not on this rank").
constexpr uint64_t kNoShutdown = 1u << 0;
constexpr uint64_t kNoUncached = 1u << 1;
constexpr uint64_t kNoInvalid = 1u << 2;
constexpr uint64_t kNothingPending = 1u << 3;
constexpr uint64_t kNoJoined = 1u << 4;
// Not inverted: AND yields "every rank has pending work".
constexpr uint64_t kHavePending = 1u << 5;

bool Cacheable(OpType type) {
  return type == OpType::kAllreduce || type == OpType::kAllgather || type == OpType::kBroadcast ||
         type == OpType::kAlltoall || type == OpType::kReducescatter || type == OpType::kBarrier;
}

void SetBit(std::vector<uint64_t>* words, uint32_t bit) {
  (*words)[bit / 64] |= uint64_t{1} << (bit % 64);
}

}  // namespace

Controller::Controller(int32_t set_id, std::vector<int32_t> global_ranks, int32_t my_global_rank,
                       std::unique_ptr<Communicator> comm, const RuntimeConfig& config,
                       HandleManager* handles, OpExecutor* executor, ProcessSetHooks* hooks,
                       RuntimeTimeline* timeline)
    : id_(set_id),
      ranks_(std::move(global_ranks)),
      comm_(std::move(comm)),
      config_(config),
      handles_(handles),
      executor_(executor),
      hooks_(hooks),
      timeline_(timeline),
      cache_(config.cache_capacity),
      posts_(comm_->posts_inputs()),
      posts_pieces_(posts_ && comm_->posts_pieces()),
      pieces_first_(posts_pieces_ && comm_->pieces_first()),
      ands_(comm_->ands_with_allreduce()),
      eager_capable_(config.eager_allreduce_bytes > 0 && (ands_ || posts_)) {
  fusion_.threshold_bytes = config.fusion_threshold_bytes;
  fusion_.disable_group_fusion = config.disable_group_fusion;
  if (comm_->rank() == 0) {
    coordinator_ = std::make_unique<Coordinator>(comm_->size(), ranks_);
    stall_ = std::make_unique<StallInspector>(config.stall_check_enabled, config.stall_check_time,
                                              config.stall_shutdown_time, ranks_);
  }
}

bool Controller::MinePending() const {
  return queue_->size() > 0 || !waiting_.empty() || (coordinator_ && !coordinator_->empty());
}

void Controller::Classify(std::chrono::steady_clock::time_point now) {
  fresh_.clear();
  queue_->PopRequests(&fresh_);
  for (const Request* r : fresh_) waiting_.push_back({r, now});
  const bool aging = config_.stall_check_enabled && config_.stall_check_time.count() > 0;
  using State = ResponseCache::State;
  lookups_.clear();
  bool grouped_miss = false, grouped_hit = false;
  for (const Waiting& w : waiting_) {
    uint32_t bit = 0;
    auto state = State::kMiss;
    if (Cacheable(w.request->type) && cache_enabled_ && cache_.capacity() > 0) {
      state = cache_.Lookup(*w.request, &bit);
    }
    // An aged hit is sent uncached so the stall inspector sees it, and its entry is erased on
    // every rank (the OR round), as Horovod's InvalidateStalledCachedTensors does: a rank that
    // enqueues the tensor late then sends it uncached too. Until 2026-11-30 the entry stayed
    // valid: the late rank's hit waited for a bit the aged rank no longer set, until its own
    // copy aged (one more stall-check time, 60 s by default), named missing meanwhile.
    if (state == State::kHit && aging && now - w.since > config_.stall_check_time) {
      state = State::kInvalid;
    }
    if (!w.request->group.empty()) {
      grouped_hit = grouped_hit || state == State::kHit;
      grouped_miss = grouped_miss || state != State::kHit;
    }
    lookups_.push_back({state, bit});
  }
  if (grouped_miss && grouped_hit) InvalidateBrokenGroups();
  size_t kept = 0;
  for (size_t i = 0; i < waiting_.size(); ++i) {
    const auto [state, bit] = lookups_[i];
    if (state == State::kHit) {
      SetBit(&hit_bits_, bit);
      waiting_[i].bit = bit;
      waiting_[kept++] = waiting_[i];
      continue;
    }
    if (state == State::kInvalid) SetBit(&invalid_bits_, bit);
    to_send_.push_back(waiting_[i].request);
  }
  waiting_.resize(kept);
}

// Rank 0 releases a group only when every member was negotiated (coordinator.h), so a group
// goes to it whole or not at all: when one member must be sent, its mates' cache hits become
// invalid (erased on every rank by the OR round) and are sent with it. A group's members are
// enqueued together, so they are all in waiting_ in the same cycle. Rare: runs only when some
// grouped requests are hits and others are not.
void Controller::InvalidateBrokenGroups() {
  using State = ResponseCache::State;
  for (size_t i = 0; i < waiting_.size(); ++i) {
    const std::string& group = waiting_[i].request->group;
    if (group.empty() || lookups_[i].first == State::kHit) continue;
    for (size_t j = 0; j < waiting_.size(); ++j) {
      if (lookups_[j].first == State::kHit && waiting_[j].request->group == group) {
        lookups_[j].first = State::kInvalid;
      }
    }
  }
}

Result<uint64_t> Controller::Agree(bool request_shutdown) {
  const bool has_invalid =
      std::any_of(invalid_bits_.begin(), invalid_bits_.end(), [](uint64_t w) { return w != 0; });
  const bool pending = MinePending();
  uint64_t word = 0;
  if (!request_shutdown && stall_reason_.empty()) word |= kNoShutdown;
  if (to_send_.empty()) word |= kNoUncached;
  if (!has_invalid) word |= kNoInvalid;
  if (!pending) word |= kNothingPending;
  if (pending) word |= kHavePending;
  // A rank with a join in flight has "joined": it has no more tensors of its own.
  if (!joined_) word |= kNoJoined;
  const size_t head = 1 + static_cast<size_t>(words_);
  const Response* eager =
      eager_bit_ != kNoEager && cache_.Has(eager_bit_) ? &cache_.Get(eager_bit_) : nullptr;
  // A lone allreduce rides the reduced tail where the communicator has one (it reduces on the
  // way instead of gathering every input); every other op, and an allreduce on shared memory,
  // rides by posting.
  eager_posted_ = eager && posts_ && !(eager->type == OpType::kAllreduce && ands_);
  // (piece_bytes_ are eager_bit_'s: EagerEligible set them with eager_pieces_.)
  const int64_t most_posted = !eager_posted_ ? 0
                              : eager_pieces_
                                  ? *std::max_element(piece_bytes_.begin(), piece_bytes_.end())
                                  : EagerInputBytes(*eager);
  if (eager_posted_ && static_cast<size_t>(most_posted) > comm_->max_posted_bytes(head)) {
    eager = nullptr;  // the same verdict on every member: a larger cache's words left no room
    eager_posted_ = false;
  }
  const size_t tail_bytes = eager && !eager_posted_
                                ? static_cast<size_t>(eager->sizes[0]) * DataTypeSize(eager->dtype)
                                : 0;
  agree_bits_.assign(head + (tail_bytes + sizeof(uint64_t) - 1) / sizeof(uint64_t), 0);
  agree_bits_[0] = word;
  std::copy(hit_bits_.begin(), hit_bits_.end(), agree_bits_.begin() + 1);
  eager_sent_ = eager != nullptr;
  if (eager_posted_) {
    HVD_RETURN_IF_ERROR(PostEager(*eager));
  } else if (eager) {
    uint64_t* const b_word = &agree_bits_[1 + eager_bit_ / 64];
    const uint64_t b_mask = uint64_t{1} << (eager_bit_ % 64);
    if ((*b_word & b_mask) != 0) {
      // b is one of this rank's hits, so its entry is in the queue's table until taken.
      const TensorEntry* e = queue_->Find(eager->names[0]);
      if (e != nullptr) {
        void* tail = agree_bits_.data() + head;
        std::memcpy(tail, e->input, tail_bytes);
        ScaleBuffer(tail, eager->sizes[0], eager->dtype, eager->prescale);
      } else {
        *b_word &= ~b_mask;  // no data to give: b cannot complete from this round
      }
    }
    HVD_RETURN_IF_ERROR(comm_->BitwiseAndWithAllreduce(agree_bits_, head, eager->sizes[0],
                                                       eager->dtype, BackendOp(eager->reduce_op)));
  } else {
    HVD_RETURN_IF_ERROR(comm_->BitwiseAnd(&agree_bits_));
  }
  const uint64_t agreed = agree_bits_[0];
  common_.assign(agree_bits_.begin() + 1, agree_bits_.begin() + head);
  if ((agreed & kNoInvalid) == 0) {
    // This round ends the posting one (every member alike): b runs as an ordinary hit.
    if (eager_posted_) eager_sent_ = false;
    HVD_RETURN_IF_ERROR(comm_->BitwiseOr(&invalid_bits_));
    for (int w = 0; w < words_; ++w) {
      for (uint64_t m = invalid_bits_[w]; m != 0; m &= m - 1) {
        cache_.Erase(static_cast<uint32_t>(w * 64 + std::countr_zero(m)));
      }
      common_[w] &= ~invalid_bits_[w];
    }
  }
  return agreed;
}

Status Controller::PostEager(const Response& eager) {
  uint64_t* const b_word = &agree_bits_[1 + eager_bit_ / 64];
  const uint64_t b_mask = uint64_t{1} << (eager_bit_ % 64);
  PostedBytes(eager, comm_->size(), &posted_bytes_);
  const void* input = nullptr;
  if ((*b_word & b_mask) != 0) {
    // b is one of this rank's hits, so its entry is in the queue's table until taken.
    const TensorEntry* e = queue_->Find(eager.names[0]);
    if (e == nullptr) {
      *b_word &= ~b_mask;  // no input to give: b cannot complete from this round
    } else if (posted_bytes_[comm_->rank()] > 0) {  // a broadcast's non-roots post nothing
      const int64_t count = e->request.NumElements();
      const size_t bytes = static_cast<size_t>(count) * DataTypeSize(eager.dtype);
      input = e->input;
      const bool reduces = eager.type == OpType::kAllreduce || eager.type == OpType::kReducescatter;
      if (bytes != static_cast<size_t>(posted_bytes_[comm_->rank()])) {
        // Cannot happen (the cached response was negotiated from this entry's shape); posting
        // nothing keeps b from completing from this round instead of misreading.
        *b_word &= ~b_mask;
        input = nullptr;
      } else if (reduces && eager.prescale != 1.0) {  // the caller's input is read-only
        eager_input_.resize(bytes);
        if (bytes > 0) std::memcpy(eager_input_.data(), e->input, bytes);
        ScaleBuffer(eager_input_.data(), count, eager.dtype, eager.prescale);
        input = eager_input_.data();
      }
    }
  }
  if (eager_pieces_) return comm_->BitwiseAndPostingPieces(agree_bits_, input, piece_bytes_);
  return comm_->BitwiseAndPostingInput(agree_bits_, input, posted_bytes_);
}

void Controller::TakeCommonHits() {
  hits_.clear();
  hit_list_.clear();
  for (int w = 0; w < words_; ++w) {
    for (uint64_t m = common_[w]; m != 0; m &= m - 1) {
      const uint32_t bit = static_cast<uint32_t>(w * 64 + std::countr_zero(m));
      if (!cache_.Has(bit)) continue;
      hits_.push_back(&cache_.Get(bit));
      hit_list_.push_back(bit);
      cache_.Touch(bit);
      if (coordinator_ && Recording()) {
        const std::string& name = hits_.back()->names[0];
        timeline_->timeline().NegotiateStart(name, TimelineOpName(hits_.back()->type));
        timeline_->timeline().NegotiateEnd(name);
      }
    }
  }
  // The waiting requests that just became common hits leave the list, in one pass (each
  // waiting request is a hit whose bit Classify recorded; one name owns one bit).
  std::erase_if(waiting_, [&](const Waiting& x) {
    return (common_[x.bit / 64] >> (x.bit % 64) & 1) != 0 && cache_.Has(x.bit);
  });
}

Result<CycleResult> Controller::RunCycle(bool request_shutdown,
                                         const std::string& shutdown_reason) {
  const auto now = std::chrono::steady_clock::now();
  to_send_.clear();
  // The bit vectors cover the cache's words in use (the same on every member), not its
  // capacity: a job with up to 64 cached tensors ANDs one word of bits, not 16.
  words_ = cache_.words_in_use();
  hit_bits_.assign(words_, 0);
  invalid_bits_.assign(words_, 0);
  Classify(now);
  if (stall_ && stall_reason_.empty() && !coordinator_->empty()) {
    // Checked every cycle (cheap: it rate-limits itself); a shutdown verdict raises this
    // rank's shutdown flag in the AND round below, so every member learns it this cycle.
    stall_reason_ = stall_->Check(now, coordinator_->Pending());
  }
  std::vector<int32_t> stalled = stall_ ? stall_->TakeNewlyMissing() : std::vector<int32_t>();
  for (const Request* r : to_send_) joined_ = joined_ || r->type == OpType::kJoin;
  auto agreed = Agree(request_shutdown);
  if (!agreed.ok()) {
    return agreed.status().WithContext("negotiation in process set " + std::to_string(id_));
  }
  const uint64_t word = *agreed;
  CycleResult result;
  result.stalled_ranks = std::move(stalled);
  result.any_pending = (word & kNothingPending) == 0;
  result.all_pending = (word & kHavePending) != 0;
  const bool any_joined = (word & kNoJoined) == 0;
  const bool slow =
      (word & (kNoShutdown | kNoUncached)) != (kNoShutdown | kNoUncached) || any_joined;
  if (!slow) {
    // Fast path: nothing but common hits; every rank plans the same fusion of them.
    TakeCommonHits();
    size_t executed = 0;
    uint32_t lone = kNoEager;
    if (eager_sent_) {
      // The eager allreduce's data came with the AND round: b completes without a round of its
      // own, the other hits run as usual.
      const auto it = std::find(hit_list_.begin(), hit_list_.end(), eager_bit_);
      if (it != hit_list_.end()) {
        const Response& r = *hits_[it - hit_list_.begin()];
        hits_.erase(hits_.begin() + (it - hit_list_.begin()));
        hit_list_.erase(it);
        if (eager_posted_) {  // b's collective computes from the inputs posted with the round
          HVD_RETURN_IF_ERROR(Process({&r, 1}, false, &result, nullptr, comm_->posted_inputs()));
        } else {
          HVD_RETURN_IF_ERROR(Process({&r, 1}, false, &result, agree_bits_.data() + 1 + words_));
        }
        executed = 1;
        lone = eager_bit_;
      }
    }
    if (hits_.size() == 1) {
      // A lone hit is its own plan: run the cached response itself (not put in the cache, so
      // it does not change under Process) instead of a copy of it, names and all.
      HVD_RETURN_IF_ERROR(Process({hits_[0], 1}, false, &result));
      executed += 1;
    } else {
      PlanFusion(hits_, fusion_, &fusion_scratch_, &fused_);
      HVD_RETURN_IF_ERROR(Process(fused_, false, &result));
      executed += fused_.size();
    }
    if (executed > 0 && HVD_LOG_ENABLED(trace)) {
      HVD_LOG_TRACE("process set {}: cycle ran {} cached response{}", id_, executed,
                    executed == 1 ? "" : "s");
    }
    // Nothing to learn where no op can be eager (eager_bit_ stays kNoEager).
    if (eager_capable_) HVD_RETURN_IF_ERROR(LearnEager(executed, lone, result.any_pending));
  } else {
    eager_bit_ = last_lone_ = kNoEager;  // the slow path may change the cache
    if (any_joined) {  // hits cannot become common while a rank has joined: send them all
      for (const Waiting& w : waiting_) to_send_.push_back(w.request);
      waiting_.clear();
      std::fill(common_.begin(), common_.end(), 0);
    }
    TakeCommonHits();
    auto negotiated = Negotiate(request_shutdown, shutdown_reason);
    if (!negotiated.ok()) {
      return negotiated.status().WithContext("negotiation in process set " + std::to_string(id_));
    }
    HVD_RETURN_IF_ERROR(Process(negotiated->responses, !any_joined, &result));
    result.shutdown = negotiated->shutdown;
    result.shutdown_reason = std::move(negotiated->shutdown_reason);
    result.shutdown_ranks = std::move(negotiated->shutdown_ranks);
  }
  result.mine_pending = MinePending();
  return result;
}

Status Controller::LearnEager(size_t executed, uint32_t lone, bool any_pending) {
  if (executed == 1 && lone == kNoEager && hit_list_.size() == 1) lone = hit_list_[0];
  // The same decision on every member: the same hits were executed everywhere, and the
  // agreed word is the same. A cycle in which no member had anything pending disarms it, so
  // an idle job's rounds (every 1-16 ms) carry b's bytes once, not forever.
  if (executed == 1 && lone != kNoEager) {
    HVD_ASSIGN_OR_RETURN(eager_bit_, NoteLone(lone));
  } else if (executed > 0) {
    // Several tensors ran (fused or not): the lone op that follows is learnt as the
    // successor of "several", e.g. a loss allreduced after each step's gradients.
    HVD_ASSIGN_OR_RETURN(eager_bit_, NoteLone(SeveralSlot()));
  } else if (!any_pending) {
    eager_bit_ = kNoEager;
  }
  return Status::OK();
}

Controller::Successor* Controller::SuccessorOf(uint32_t slot) {
  if (slot == SeveralSlot()) return &several_next_;
  return slot < next_lone_.size() ? &next_lone_[slot] : nullptr;
}

Result<uint32_t> Controller::NoteLone(uint32_t lone) {
  if (Successor* s = SuccessorOf(last_lone_)) {
    s->confirmed = s->bit == lone;
    s->bit = lone;
  }
  last_lone_ = lone;
  const Successor* next = SuccessorOf(lone);
  if (next == nullptr || !next->confirmed) return kNoEager;
  HVD_ASSIGN_OR_RETURN(const bool eligible, EagerEligible(next->bit));
  return eligible ? next->bit : kNoEager;
}

int64_t Controller::EagerInputBytes(const Response& r) {
  if (r.device >= 0 || r.names.size() != 1 || r.sizes.empty() || r.reduce_op == ReduceOp::kAdasum) {
    return -1;
  }
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  switch (r.type) {
    case OpType::kAllreduce:
    case OpType::kBroadcast:
    case OpType::kReducescatter:
      return r.sizes[0] * elem;
    case OpType::kAlltoall: {
      // An even split of tensors of one size (sizes[0] is then every member's elements).
      const auto& rows = r.even_alltoall_rows;
      const bool same = !rows.empty() && std::all_of(rows.begin(), rows.end(),
                                                     [&](int64_t d) { return d == rows[0]; });
      return same ? r.sizes[0] * elem : -1;
    }
    case OpType::kAllgather:
      if (r.row_elements.size() != 1) return -1;
      return *std::max_element(r.sizes.begin(), r.sizes.end()) * r.row_elements[0] * elem;
    default:
      return -1;
  }
}

void Controller::PostedBytes(const Response& r, int members, std::vector<int64_t>* out) {
  const int64_t elem = static_cast<int64_t>(DataTypeSize(r.dtype));
  out->assign(members, 0);
  for (int k = 0; k < members; ++k) {
    switch (r.type) {
      case OpType::kAllgather:
        (*out)[k] = r.sizes[k] * r.row_elements[0] * elem;
        break;
      case OpType::kBroadcast:
        (*out)[k] = k == r.root ? r.sizes[0] * elem : 0;
        break;
      default:  // allreduce, reducescatter, an even alltoall: every member's whole input
        (*out)[k] = r.sizes[0] * elem;
    }
  }
}

int64_t Controller::PostedSurplusBytes(const Response& r, int members) {
  if (r.type == OpType::kAllgather || r.type == OpType::kBroadcast) return 0;
  const int64_t bytes = r.sizes[0] * static_cast<int64_t>(DataTypeSize(r.dtype));
  return (members - 1) * (bytes - bytes / members);
}

Result<bool> Controller::EagerEligible(uint32_t bit) {
  eager_pieces_ = false;
  if (bit == kNoEager || config_.eager_allreduce_bytes <= 0 || !cache_.Has(bit)) return false;
  const Response& r = cache_.Get(bit);
  const int64_t bytes = EagerInputBytes(r);
  if (bytes <= 0) return false;
  const bool splits =
      posts_pieces_ && (r.type == OpType::kAlltoall || r.type == OpType::kReducescatter);
  // Each member's piece: what a reducescatter's segments are, and what posting by pieces sends.
  int64_t largest_piece = 0;
  if (splits || r.type == OpType::kReducescatter) {
    PostedPieces(r, cache_.Params(bit), comm_->size(), &piece_bytes_);
    largest_piece = *std::max_element(piece_bytes_.begin(), piece_bytes_.end());
  }
  // Posted inputs reduce in rank order: a reducescatter whose own rounds would not (a ring, a
  // hierarchy) takes them every time, so its bits do not depend on the path.
  if (r.type == OpType::kReducescatter && !comm_->reduces_segments_in_rank_order(largest_piece)) {
    return false;
  }
  const int64_t surplus = PostedSurplusBytes(r, comm_->size());
  // An op that posts nothing beyond what it moves (a broadcast, an allgather; any op where the
  // surplus is never read) costs only the copy it makes anyway, so it may post more where the
  // round it saves costs more.
  const int factor = posts_ && (surplus == 0 || comm_->posting_costs_a_copy())
                         ? std::min(comm_->posted_copy_factor(), Communicator::kMaxPostedCopyFactor)
                         : 1;
  const int64_t limit_bytes = config_.eager_allreduce_bytes * factor;
  if (bytes <= limit_bytes && !(splits && pieces_first_)) {
    // An allreduce rides the reduced tail where there is one (Agree), else by posting, whose
    // surplus the communicator bounds.
    // Only where the ride reduces as the op's own rounds would: a lone op rides, the same op
    // among others does not, and its result must not depend on which it was (until 2026-12-02
    // a TCP allreduce of 8-32 KiB on 3 or more ranks rode recursive doubling but took
    // halving-doubling on its own). Posted inputs reduce in rank order, as no TCP allreduce
    // does: such an allreduce takes its own rounds.
    if (r.type == OpType::kAllreduce && ands_) {
      return comm_->rides_allreduce_as_own(r.sizes[0], r.dtype);
    }
    if (!posts_) return false;
    HVD_ASSIGN_OR_RETURN(const int64_t limit, comm_->PostedSurplusLimit(surplus));
    if (surplus <= limit) return true;
  }
  // Too large to post whole, or too much surplus, or pieces come first here: an alltoall or
  // reducescatter may post each member its own piece, each piece up to the limit.
  if (!splits) return false;
  eager_pieces_ = largest_piece <= config_.eager_allreduce_bytes;
  return eager_pieces_;
}

void Controller::PostedPieces(const Response& r, const Request& params, int members,
                              std::vector<int64_t>* out) {
  const int64_t dim0 = params.shape.empty() ? 0 : params.shape[0];
  const int64_t row = RowElements(params.shape) * static_cast<int64_t>(DataTypeSize(r.dtype));
  out->assign(members, 0);
  for (int j = 0; j < members; ++j) {
    // An even alltoall sends dim0 / members rows to each member (its remainder stays put).
    (*out)[j] =
        (r.type == OpType::kAlltoall ? dim0 / members : ScatterRows(dim0, members, j)) * row;
  }
}

Result<ResponseList> Controller::Negotiate(bool request_shutdown,
                                           const std::string& shutdown_reason) {
  RequestList mine;
  mine.requests.reserve(to_send_.size());
  for (const Request* r : to_send_) {
    mine.requests.push_back(*r);
    mine.requests.back().rank = comm_->rank();
  }
  mine.shutdown = request_shutdown;
  if (request_shutdown) mine.shutdown_reason = shutdown_reason;
  std::vector<std::string> gathered;
  HVD_RETURN_IF_ERROR(comm_->GatherBytes(EncodeRequestList(mine), 0, &gathered));
  std::string encoded;
  if (comm_->rank() == 0) {
    encoded = EncodeResponseList(CoordinateLocked(gathered));
  }
  HVD_RETURN_IF_ERROR(comm_->BroadcastBytes(&encoded, 0));
  auto decoded = DecodeResponseList(encoded);
  if (!decoded.ok()) return decoded;
  // Before any size in it is used: it may have crossed hosts unauthenticated.
  HVD_RETURN_IF_ERROR(CheckResponseList(*decoded, comm_->size()));
  if (HVD_LOG_ENABLED(debug)) LogNegotiated(*decoded);
  return decoded;
}

// --log-level DEBUG: what each negotiation decided (cache hits, a training step's usual path,
// are not negotiated and not logged here; TRACE logs them per cycle).
void Controller::LogNegotiated(const ResponseList& list) const {
  constexpr size_t kNamesShown = 4;
  for (const Response& r : list.responses) {
    const size_t shown = std::min(r.names.size(), kNamesShown);
    const std::string more =
        r.names.size() > shown ? fmt::format(" and {} more", r.names.size() - shown) : "";
    std::vector<std::string_view> names(r.names.begin(), r.names.begin() + shown);
    if (r.type == OpType::kError) {
      HVD_LOG_DEBUG("process set {}: negotiated an error for [{}]{}: {}", id_,
                    fmt::join(names, ", "), more, r.error);
    } else {
      HVD_LOG_DEBUG("process set {}: negotiated {} of {} tensor{} [{}]{}", id_, OpTypeName(r.type),
                    r.names.size(), r.names.size() == 1 ? "" : "s", fmt::join(names, ", "), more);
    }
  }
  if (list.shutdown) {
    HVD_LOG_DEBUG("process set {}: negotiated a shutdown (asked by members {}){}", id_,
                  list.shutdown_ranks,
                  list.shutdown_reason.empty() ? "" : ": " + list.shutdown_reason);
  }
}

ResponseList Controller::CoordinateLocked(const std::vector<std::string>& lists) {
  const auto now = std::chrono::steady_clock::now();
  ResponseList out;
  const bool recording = Recording();
  for (size_t r = 0; r < lists.size(); ++r) {
    auto decoded = DecodeRequestList(lists[r]);
    if (!decoded.ok()) {
      // Its requests are lost: every rank stops now, saying why, rather than wait for them
      // until the stall check.
      out.shutdown = true;
      if (out.shutdown_reason.empty()) {
        out.shutdown_reason = fmt::format(
            "rank {} of process set {} sent a request list rank 0 cannot read ({}): a data "
            "connection altered on its way, or a rank of another hvd build",
            r, id_, decoded.status().message());
      }
      continue;
    }
    if (decoded->shutdown && !decoded->shutdown_reason.empty()) {
      // Not this member's hvd_shutdown: a verdict it passes on (a process set's stall), which
      // the error then gives instead of blaming the member (until 2026-12-01 it did).
      out.shutdown = true;
      if (out.shutdown_reason.empty()) out.shutdown_reason = decoded->shutdown_reason;
    } else if (decoded->shutdown) {
      out.shutdown = true;
      out.shutdown_ranks.push_back(static_cast<int32_t>(r));
    }
    for (Request& q : decoded->requests) {
      q.rank = static_cast<int32_t>(r);  // trust the position, not the payload
      const bool fresh = coordinator_->Add(q, now);
      if (recording && q.type != OpType::kJoin) {
        if (fresh) timeline_->timeline().NegotiateStart(q.name, TimelineOpName(q.type));
        timeline_->timeline().NegotiateRankReady(q.name, q.rank);
      }
    }
  }
  std::vector<Response> ready = coordinator_->TakeReady();
  if (recording) {
    for (const Response& response : ready) {
      if (response.type == OpType::kJoin) continue;  // its negotiation was not opened above
      for (const std::string& name : response.names) timeline_->timeline().NegotiateEnd(name);
    }
  }
  // The common hits go first, then what became ready, fused together.
  std::vector<Response> all;
  all.reserve(hits_.size() + ready.size());
  for (const Response* hit : hits_) all.push_back(*hit);
  all.insert(all.end(), std::make_move_iterator(ready.begin()),
             std::make_move_iterator(ready.end()));
  out.responses = PlanFusion(std::move(all), fusion_);
  if (!stall_reason_.empty()) {
    out.shutdown = true;
    if (out.shutdown_reason.empty()) out.shutdown_reason = stall_reason_;
  }
  return out;
}

void Controller::PutInCache(const Response& response) {
  if (!Cacheable(response.type) || !cache_enabled_ || cache_.capacity() == 0) return;
  PutEachInCache(response);
  // Every bit the cache has made gets its successor record now, on the negotiation's path,
  // not when the fast path first sees it run alone (an allocation there, in steady state).
  if (next_lone_.size() < cache_.bits_made()) next_lone_.resize(cache_.bits_made());
}

void Controller::PutEachInCache(const Response& response) {
  if (response.names.size() == 1) {
    if (entries_[0]) cache_.Put(response, entries_[0]->request);
    return;
  }
  for (size_t i = 0; i < response.names.size(); ++i) {
    if (!entries_[i]) continue;
    Response single = response;
    single.names = {response.names[i]};
    if (response.type == OpType::kAllgather) {
      // Name-major blocks of set-size dims 0, and one row size per name.
      const size_t n = response.sizes.size() / response.names.size();
      single.sizes.assign(response.sizes.begin() + i * n, response.sizes.begin() + (i + 1) * n);
      single.row_elements.clear();
      if (i < response.row_elements.size()) single.row_elements = {response.row_elements[i]};
    } else {
      single.sizes = {response.sizes[i]};
    }
    cache_.Put(single, entries_[i]->request);
  }
}

Status Controller::Process(std::span<const Response> responses, bool put_in_cache,
                           CycleResult* result, const void* reduced, Communicator* via) {
  for (const Response& response : responses) {
    result->progress = true;
    if (response.type == OpType::kJoin || response.type == OpType::kProcessSetAdd ||
        response.type == OpType::kProcessSetRemove) {
      HVD_RETURN_IF_ERROR(ProcessControl(response));
      continue;
    }
    entries_.clear();
    queue_->Take(response.names, &entries_);
    if (put_in_cache) PutInCache(response);
    Status outcome;
    Status s =
        executor_->Execute(response, entries_, via ? via : comm_.get(), &outcome, &gpu_, reduced);
    if (executor_->TakeDeferred()) {
      // The GPU group finishes the handles (OpExecutor::TakeDeferred); the entries may be
      // released at any moment from now on.
      entries_.clear();
    } else {
      finished_.clear();
      for (const TensorEntry* e : entries_) {
        if (e) finished_.push_back(e->handle);
      }
      entries_.clear();  // the caller may release them once their handles are finished
      handles_->FinishParts(finished_, outcome);
    }
    HVD_RETURN_IF_ERROR(s);
    if (report_executed_ && response.type != OpType::kError) result->executed.push_back(response);
  }
  return Status::OK();
}

void Controller::ApplyTuning(int64_t fusion_threshold_bytes, bool cache_enabled) {
  fusion_.threshold_bytes = fusion_threshold_bytes;
  eager_bit_ = last_lone_ = kNoEager;
  if (cache_enabled != cache_enabled_) {
    // Start from an empty cache: while it was off, one rank may have sent a tensor uncached
    // that another rank would now classify as a hit, and neither would ever match.
    cache_ = ResponseCache(cache_.capacity());
    cache_enabled_ = cache_enabled;
    next_lone_.clear();
    several_next_ = Successor();
  }
}

Status Controller::ProcessControl(const Response& response) {
  TensorEntry* entry = queue_->Take(response.names.at(0));
  Status status;
  int64_t value = -1;
  if (response.type == OpType::kJoin) {
    joined_ = false;
    value = response.last_joined_rank;
    if (Recording()) {
      timeline_->timeline().Start(response.names.at(0), "JOIN");
      timeline_->timeline().End(response.names.at(0), "", "[]");
    }
  } else if (hooks_ == nullptr) {
    status = Status::Internal("process sets can only be changed through the global set");
  } else if (response.type == OpType::kProcessSetAdd) {
    std::vector<int32_t> ranks(response.sizes.begin(), response.sizes.end());
    auto id = hooks_->AddProcessSet(ranks);
    status = id.ok() ? Status::OK() : id.status();
    value = id.ok() ? *id : -1;
  } else {
    status = hooks_->RemoveProcessSet(static_cast<int32_t>(response.sizes.at(0)));
  }
  if (entry) {
    handles_->SetIntResult(entry->handle, value);
    handles_->FinishPart(entry->handle, status);
  }
  return Status::OK();
}

void Controller::DrainDeferred() {
  if (!config_.gpu_async_completion || !(gpu_.decided || gpu_.local_decided)) return;
  for (GpuGroup* g : {gpu_.group.get(), gpu_.local_group.get()}) {
    if (g == nullptr) continue;
    const Status s = g->Drain();  // its failure went to the ops it was draining
    if (!s.ok()) HVD_LOG_DEBUG("GPU completions before the shutdown: {}", s.message());
  }
  // A member's device passing its part does not mean its peers' parts are done (NCCL's proxy
  // may still be sending the last chunk), and the group's end aborts the communicator: no member
  // ends it before every member drained. Every member decided the set's GPU path at the same
  // op, so all of them or none come here.
  const Status s = comm_->Barrier();
  if (!s.ok()) HVD_LOG_DEBUG("the barrier after the GPU completions: {}", s.message());
}

void Controller::FailAll(const Status& status) {
  // Completions handed to the set's GPU groups (GpuGroup::Defer) fail with the same status.
  if (gpu_.group != nullptr) gpu_.group->FailDeferred(status);
  if (gpu_.local_group != nullptr) gpu_.local_group->FailDeferred(status);
  waiting_.clear();
  // Closed with it: an enqueue that found this controller before its set was removed (or the
  // runtime stopped) and adds only now fails at once instead of waiting for cycles that never
  // come (the caller's handle would never complete).
  for (TensorEntry& e : queue_->TakeAll(status)) handles_->FinishPart(e.handle, status);
}

}  // namespace hvd::runtime
