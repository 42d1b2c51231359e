#ifndef HVD_TIMELINE_SPSC_QUEUE_H_
#define HVD_TIMELINE_SPSC_QUEUE_H_

#include <atomic>
#include <cstddef>
#include <utility>
#include <vector>

#include "common/check.h"

// Bounded lock-free single-producer / single-consumer ring. TryPush is called by at most
// one thread at a time (the producer side), TryPop by at most one thread at a time (the
// consumer side); the two sides never wait on each other. Neither call allocates except
// through T's move assignment.
namespace hvd::timeline {

template <typename T>
class SpscQueue {
 public:
  explicit SpscQueue(size_t capacity) : slots_(capacity) { HVD_CHECK_GE(capacity, size_t{1}); }
  SpscQueue(const SpscQueue&) = delete;
  SpscQueue& operator=(const SpscQueue&) = delete;

  // Returns false (and leaves `value` untouched) when the ring is full.
  bool TryPush(T& value) {
    const size_t tail = tail_.load(std::memory_order_relaxed);
    if (tail - head_.load(std::memory_order_acquire) == slots_.size()) return false;
    slots_[tail % slots_.size()] = std::move(value);
    tail_.store(tail + 1, std::memory_order_release);
    return true;
  }

  // Returns false when the ring is empty.
  bool TryPop(T* out) {
    const size_t head = head_.load(std::memory_order_relaxed);
    if (head == tail_.load(std::memory_order_acquire)) return false;
    *out = std::move(slots_[head % slots_.size()]);
    head_.store(head + 1, std::memory_order_release);
    return true;
  }

  size_t capacity() const { return slots_.size(); }

 private:
  std::vector<T> slots_;
  // Monotonic counters; the slot index is counter % capacity.
  alignas(64) std::atomic<size_t> head_{0};  // written by the consumer
  alignas(64) std::atomic<size_t> tail_{0};  // written by the producer
};

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_SPSC_QUEUE_H_
