#include "runtime/core/negotiation/response_cache.h"

#include <algorithm>
#include <functional>

#include "common/check.h"
#include "common/logging.h"

namespace hvd::runtime {

bool SameParams(const Request& a, const Request& b) {
  return a.type == b.type && a.dtype == b.dtype && a.shape == b.shape && a.root == b.root &&
         a.reduce_op == b.reduce_op && a.prescale == b.prescale && a.postscale == b.postscale &&
         a.device == b.device && a.group == b.group && a.group_size == b.group_size &&
         // an alltoall's response says whether every member splits evenly
         (a.type != OpType::kAlltoall || a.args.empty() == b.args.empty());
}

ResponseCache::ResponseCache(int64_t capacity) : capacity_(capacity < 0 ? 0 : capacity) {}

ResponseCache::State ResponseCache::Lookup(const Request& request, uint32_t* bit) const {
  auto it = by_name_.find(request.name);
  if (it == by_name_.end()) return State::kMiss;
  *bit = it->second;
  return SameParams(entries_[it->second].params, request) ? State::kHit : State::kInvalid;
}

void ResponseCache::Put(const Response& response, const Request& params) {
  if (capacity_ == 0) return;
  HVD_CHECK_EQ(response.names.size(), 1u) << "cache entries are per tensor";
  auto it = by_name_.find(response.names[0]);
  uint32_t bit;
  if (it != by_name_.end()) {
    bit = it->second;
    lru_.erase(entries_[bit].lru_pos);
  } else if (!free_bits_.empty()) {
    bit = free_bits_.back();
    free_bits_.pop_back();
  } else if (static_cast<int64_t>(entries_.size()) < capacity_) {
    bit = static_cast<uint32_t>(entries_.size());
    entries_.emplace_back();
  } else {
    bit = lru_.back();
    lru_.pop_back();
    by_name_.erase(entries_[bit].response.names[0]);
    ++evictions_;
    if (!warned_) {
      warned_ = true;
      HVD_LOG_WARNING(
          "A response has been evicted from cache which may indicate reduced performance. Better "
          "performance may be obtained by disabling caching (HOROVOD_CACHE_CAPACITY=0) or "
          "increasing the cache capacity (HOROVOD_CACHE_CAPACITY={}).",
          capacity_ * 2);
    }
  }
  high_water_ = std::max<int64_t>(high_water_, bit);
  Entry& e = entries_[bit];
  e.response = response;
  e.params = params;
  e.params.rank = 0;
  e.used = true;
  lru_.push_front(bit);
  e.lru_pos = lru_.begin();
  by_name_[response.names[0]] = bit;
}

const Response& ResponseCache::Get(uint32_t bit) const {
  HVD_CHECK(Has(bit)) << "bit " << bit;
  return entries_[bit].response;
}

const Request& ResponseCache::Params(uint32_t bit) const {
  HVD_CHECK(Has(bit)) << "bit " << bit;
  return entries_[bit].params;
}

bool ResponseCache::Has(uint32_t bit) const { return bit < entries_.size() && entries_[bit].used; }

void ResponseCache::Erase(uint32_t bit) {
  if (!Has(bit)) return;
  Entry& e = entries_[bit];
  by_name_.erase(e.response.names[0]);
  lru_.erase(e.lru_pos);
  e.used = false;
  free_bits_.push_back(bit);
  // Keep the lowest free bit at the back so allocation stays deterministic.
  std::sort(free_bits_.begin(), free_bits_.end(), std::greater<uint32_t>());
}

void ResponseCache::Touch(uint32_t bit) {
  if (!Has(bit)) return;
  // Relinks the existing list node (no allocation; lru_pos stays valid).
  lru_.splice(lru_.begin(), lru_, entries_[bit].lru_pos);
}

}  // namespace hvd::runtime
