#ifndef HVD_RUNTIME_CORE_NEGOTIATION_RESPONSE_CACHE_H_
#define HVD_RUNTIME_CORE_NEGOTIATION_RESPONSE_CACHE_H_

#include <cstdint>
#include <deque>
#include <list>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/core/negotiation/message.h"

namespace hvd::runtime {

// ResponseCache remembers the per-tensor responses of recently negotiated collectives so a
// repeated request (same name, same parameters) skips the trip to rank 0: each entry owns a
// bit position, and ranks agree on what is ready by ANDing bit vectors (controller.h).
//
// Every rank must mutate its cache identically (Put/Erase/Touch in the same order with the
// same arguments) so bit positions agree; the controller guarantees that. Capacity 0 disables
// the cache. Entries are made as bits are first used, the lowest free bit first, so a large
// capacity costs nothing until that many tensors are seen (a whole capacity of ~400-byte entries
// was allocated for every process set, 420 MB at 2^20, until 2026-12-02). LRU eviction reuses
// the victim's bit and warns once. Background thread only.
class ResponseCache {
 public:
  enum class State { kMiss, kHit, kInvalid };

  explicit ResponseCache(int64_t capacity);

  int64_t capacity() const { return capacity_; }
  size_t size() const { return by_name_.size(); }
  // The bits made so far (0..bits_made()-1), in use or free; they are never unmade.
  size_t bits_made() const { return entries_.size(); }
  // kHit: same name and parameters (bit set); kInvalid: same name, different parameters.
  State Lookup(const Request& request, uint32_t* bit) const;
  // Stores (or replaces) the entry for response.names[0]; `params` is this rank's request.
  void Put(const Response& response, const Request& params);
  const Response& Get(uint32_t bit) const;
  const Request& Params(uint32_t bit) const;
  bool Has(uint32_t bit) const;
  void Erase(uint32_t bit);
  // Marks the entry most recently used.
  void Touch(uint32_t bit);
  int64_t evictions() const { return evictions_; }
  // 64-bit words that hold every bit used since this cache was made (bits are taken lowest
  // first, so a job with few tensors needs one): the same on every rank, whose caches change
  // alike, so the AND round sends only these.
  int words_in_use() const { return static_cast<int>((high_water_ + 64) / 64); }

 private:
  struct Entry {
    Response response;
    Request params;
    std::list<uint32_t>::iterator lru_pos;
    bool used = false;
  };

  int64_t capacity_;
  // Indexed by bit, grown one bit at a time up to capacity_ (a deque: a reference to an entry,
  // which the controller keeps across a Put, stays valid).
  std::deque<Entry> entries_;
  std::list<uint32_t> lru_;  // front = most recently used
  // Erased bits, descending, so the lowest is used first (each below entries_.size(), so before
  // a fresh one).
  std::vector<uint32_t> free_bits_;
  std::unordered_map<std::string, uint32_t> by_name_;
  int64_t evictions_ = 0;
  int64_t high_water_ = -1;  // the highest bit ever used
  bool warned_ = false;
};

// True when two requests for the same name may share a cached response.
bool SameParams(const Request& a, const Request& b);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_NEGOTIATION_RESPONSE_CACHE_H_
