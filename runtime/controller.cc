#include "runtime/controller.h"

#include <algorithm>
#include <bit>

#include "common/logging.h"

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
         type == OpType::kAlltoall || type == OpType::kReducescatter;
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
      cache_words_(static_cast<int>((config.cache_capacity + 63) / 64)) {
  fusion_.threshold_bytes = config.fusion_threshold_bytes;
  fusion_.disable_group_fusion = config.disable_group_fusion;
  if (comm_->rank() == 0) {
    coordinator_ = std::make_unique<Coordinator>(comm_->size());
    stall_ = std::make_unique<StallInspector>(config.stall_check_enabled, config.stall_check_time,
                                              config.stall_shutdown_time, ranks_);
  }
}

bool Controller::MinePending() const {
  return queue_.size() > 0 || !waiting_.empty() || (coordinator_ && !coordinator_->empty());
}

void Controller::Classify(std::chrono::steady_clock::time_point now, std::vector<Request>* to_send,
                          std::vector<uint64_t>* hit_bits, std::vector<uint64_t>* invalid_bits) {
  std::vector<Request> fresh;
  queue_.PopRequests(&fresh);
  for (auto& r : fresh) waiting_.push_back({std::move(r), now});
  const bool aging = config_.stall_check_enabled && config_.stall_check_time.count() > 0;
  std::vector<Waiting> keep;
  for (auto& w : waiting_) {
    uint32_t bit = 0;
    auto state = ResponseCache::State::kMiss;
    if (Cacheable(w.request.type) && cache_enabled_ && cache_.capacity() > 0) {
      state = cache_.Lookup(w.request, &bit);
    }
    const bool aged = aging && now - w.since > config_.stall_check_time;
    if (state == ResponseCache::State::kHit && !aged) {
      SetBit(hit_bits, bit);
      keep.push_back(std::move(w));
      continue;
    }
    if (state == ResponseCache::State::kInvalid) SetBit(invalid_bits, bit);
    to_send->push_back(std::move(w.request));
  }
  waiting_ = std::move(keep);
}

Result<Controller::Agreement> Controller::Agree(bool request_shutdown, bool has_uncached,
                                                std::vector<uint64_t> hit_bits,
                                                std::vector<uint64_t> invalid_bits) {
  const bool has_invalid =
      std::any_of(invalid_bits.begin(), invalid_bits.end(), [](uint64_t w) { return w != 0; });
  const bool pending = MinePending();
  uint64_t word = 0;
  if (!request_shutdown && stall_reason_.empty()) word |= kNoShutdown;
  if (!has_uncached) word |= kNoUncached;
  if (!has_invalid) word |= kNoInvalid;
  if (!pending) word |= kNothingPending;
  if (pending) word |= kHavePending;
  // A rank with a join in flight has "joined": it has no more tensors of its own.
  if (!joined_) word |= kNoJoined;
  std::vector<uint64_t> bits(1 + cache_words_);
  bits[0] = word;
  std::copy(hit_bits.begin(), hit_bits.end(), bits.begin() + 1);
  HVD_RETURN_IF_ERROR(comm_->BitwiseAnd(&bits));
  Agreement a;
  a.status_word = bits[0];
  a.common.assign(bits.begin() + 1, bits.end());
  if ((a.status_word & kNoInvalid) == 0) {
    HVD_RETURN_IF_ERROR(comm_->BitwiseOr(&invalid_bits));
    for (int w = 0; w < cache_words_; ++w) {
      for (uint64_t m = invalid_bits[w]; m != 0; m &= m - 1) {
        cache_.Erase(static_cast<uint32_t>(w * 64 + std::countr_zero(m)));
      }
      a.common[w] &= ~invalid_bits[w];
    }
  }
  return a;
}

std::vector<Response> Controller::TakeCommonHits(const std::vector<uint64_t>& common) {
  std::vector<Response> out;
  for (int w = 0; w < cache_words_; ++w) {
    for (uint64_t m = common[w]; m != 0; m &= m - 1) {
      const uint32_t bit = static_cast<uint32_t>(w * 64 + std::countr_zero(m));
      if (!cache_.Has(bit)) continue;
      out.push_back(cache_.Get(bit));
      cache_.Touch(bit);
      const std::string& name = out.back().names[0];
      if (coordinator_ && Recording()) {
        timeline_->timeline().NegotiateStart(name, TimelineOpName(out.back().type));
        timeline_->timeline().NegotiateEnd(name);
      }
      auto it = std::find_if(waiting_.begin(), waiting_.end(),
                             [&](const Waiting& x) { return x.request.name == name; });
      if (it != waiting_.end()) waiting_.erase(it);
    }
  }
  return out;
}

Result<CycleResult> Controller::RunCycle(bool request_shutdown) {
  const auto now = std::chrono::steady_clock::now();
  std::vector<Request> to_send;
  std::vector<uint64_t> hit_bits(cache_words_), invalid_bits(cache_words_);
  Classify(now, &to_send, &hit_bits, &invalid_bits);
  if (stall_ && stall_reason_.empty() && !coordinator_->empty()) {
    // Checked every cycle (cheap: it rate-limits itself); a shutdown verdict raises this
    // rank's shutdown flag in the AND round below, so every member learns it this cycle.
    stall_reason_ = stall_->Check(now, coordinator_->Pending());
  }
  for (const Request& r : to_send) joined_ = joined_ || r.type == OpType::kJoin;
  auto agreed =
      Agree(request_shutdown, !to_send.empty(), std::move(hit_bits), std::move(invalid_bits));
  if (!agreed.ok()) {
    return agreed.status().WithContext("negotiation in process set " + std::to_string(id_));
  }
  const uint64_t word = agreed->status_word;
  CycleResult result;
  result.any_pending = (word & kNothingPending) == 0;
  result.all_pending = (word & kHavePending) != 0;
  const bool any_joined = (word & kNoJoined) == 0;
  const bool slow =
      (word & (kNoShutdown | kNoUncached)) != (kNoShutdown | kNoUncached) || any_joined;
  ResponseList list;
  if (!slow) {
    list.responses = PlanFusion(TakeCommonHits(agreed->common), fusion_);
  } else {
    if (any_joined) {  // hits cannot become common while a rank has joined: send them all
      for (auto& w : waiting_) to_send.push_back(std::move(w.request));
      waiting_.clear();
      std::fill(agreed->common.begin(), agreed->common.end(), 0);
    }
    auto negotiated =
        Negotiate(std::move(to_send), request_shutdown, TakeCommonHits(agreed->common));
    if (!negotiated.ok()) {
      return negotiated.status().WithContext("negotiation in process set " + std::to_string(id_));
    }
    list = std::move(negotiated).value();
  }
  HVD_RETURN_IF_ERROR(Process(list, slow && !any_joined, &result));
  result.shutdown = list.shutdown;
  result.shutdown_reason = list.shutdown_reason;
  result.mine_pending = MinePending();
  return result;
}

Result<ResponseList> Controller::Negotiate(std::vector<Request> to_send, bool request_shutdown,
                                           std::vector<Response> cached) {
  RequestList mine;
  for (auto& r : to_send) r.rank = comm_->rank();
  mine.requests = std::move(to_send);
  mine.shutdown = request_shutdown;
  std::vector<std::string> gathered;
  HVD_RETURN_IF_ERROR(comm_->GatherBytes(EncodeRequestList(mine), 0, &gathered));
  std::string encoded;
  if (comm_->rank() == 0) {
    bool malformed = false;
    ResponseList out = CoordinateLocked(gathered, std::move(cached), &malformed);
    if (malformed) HVD_LOG_ERROR("process set {}: dropped a malformed request list", id_);
    encoded = EncodeResponseList(out);
  }
  HVD_RETURN_IF_ERROR(comm_->BroadcastBytes(&encoded, 0));
  return DecodeResponseList(encoded);
}

ResponseList Controller::CoordinateLocked(const std::vector<std::string>& lists,
                                          std::vector<Response> cached, bool* malformed) {
  const auto now = std::chrono::steady_clock::now();
  ResponseList out;
  const bool recording = Recording();
  for (size_t r = 0; r < lists.size(); ++r) {
    auto decoded = DecodeRequestList(lists[r]);
    if (!decoded.ok()) {
      *malformed = true;
      continue;
    }
    out.shutdown = out.shutdown || decoded->shutdown;
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
  cached.insert(cached.end(), std::make_move_iterator(ready.begin()),
                std::make_move_iterator(ready.end()));
  out.responses = PlanFusion(std::move(cached), fusion_);
  if (!stall_reason_.empty()) {
    out.shutdown = true;
    out.shutdown_reason = stall_reason_;
  }
  return out;
}

void Controller::PutInCache(const Response& response,
                            const std::vector<std::optional<TensorEntry>>& entries) {
  if (!Cacheable(response.type) || !cache_enabled_ || cache_.capacity() == 0) return;
  if (response.names.size() == 1) {
    if (entries[0]) cache_.Put(response, entries[0]->request);
    return;
  }
  for (size_t i = 0; i < response.names.size(); ++i) {
    if (!entries[i]) continue;
    Response single = response;
    single.names = {response.names[i]};
    single.sizes = {response.sizes[i]};
    cache_.Put(single, entries[i]->request);
  }
}

Status Controller::Process(const ResponseList& list, bool put_in_cache, CycleResult* result) {
  for (const Response& response : list.responses) {
    result->progress = true;
    if (response.type == OpType::kJoin || response.type == OpType::kProcessSetAdd ||
        response.type == OpType::kProcessSetRemove) {
      HVD_RETURN_IF_ERROR(ProcessControl(response));
      continue;
    }
    std::vector<std::optional<TensorEntry>> entries;
    entries.reserve(response.names.size());
    for (const std::string& name : response.names) entries.push_back(queue_.Take(name));
    if (put_in_cache) PutInCache(response, entries);
    HVD_RETURN_IF_ERROR(executor_->Execute(response, entries, comm_.get()));
    if (report_executed_ && response.type != OpType::kError) result->executed.push_back(response);
  }
  return Status::OK();
}

void Controller::ApplyTuning(int64_t fusion_threshold_bytes, bool cache_enabled) {
  fusion_.threshold_bytes = fusion_threshold_bytes;
  if (cache_enabled != cache_enabled_) {
    // Start from an empty cache: while it was off, one rank may have sent a tensor uncached
    // that another rank would now classify as a hit, and neither would ever match.
    cache_ = ResponseCache(cache_.capacity());
    cache_enabled_ = cache_enabled;
  }
}

Status Controller::ProcessControl(const Response& response) {
  std::optional<TensorEntry> entry = queue_.Take(response.names.at(0));
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

void Controller::FailAll(const Status& status) {
  for (TensorEntry& e : queue_.TakeAll()) handles_->FinishPart(e.handle, status);
  waiting_.clear();
}

}  // namespace hvd::runtime
