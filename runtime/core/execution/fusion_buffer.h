#ifndef HVD_RUNTIME_CORE_EXECUTION_FUSION_BUFFER_H_
#define HVD_RUNTIME_CORE_EXECUTION_FUSION_BUFFER_H_

#include <cstddef>
#include <cstdint>
#include <memory>

namespace hvd::runtime {

// The persistent staging buffer for fused collectives. It is allocated on first use at
// max(threshold, request) bytes and then reused; it is re-allocated only when a request
// exceeds it or the threshold changes, so a steady-state training step allocates nothing
// here. allocations() counts (re)allocations for tests and benchmarks. Background thread only.
class FusionBuffer {
 public:
  explicit FusionBuffer(int64_t threshold_bytes) : threshold_(threshold_bytes) {}

  // A buffer of at least `bytes` bytes, 64-byte aligned; valid until the next call.
  void* Get(int64_t bytes);
  void SetThreshold(int64_t threshold_bytes);
  int64_t capacity() const { return capacity_; }
  int64_t allocations() const { return allocations_; }

 private:
  struct Free {
    void operator()(void* p) const;
  };
  int64_t threshold_;
  int64_t capacity_ = 0;
  int64_t allocations_ = 0;
  std::unique_ptr<void, Free> data_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_EXECUTION_FUSION_BUFFER_H_
