#include "runtime/core/execution/fusion_buffer.h"

#include <algorithm>
#include <cstdlib>

#include "common/check.h"

namespace hvd::runtime {

void FusionBuffer::Free::operator()(void* p) const { std::free(p); }

void* FusionBuffer::Get(int64_t bytes) {
  if (bytes > capacity_ || !data_) {
    int64_t want = std::max<int64_t>({bytes, threshold_, 64});
    want = (want + 63) / 64 * 64;
    data_.reset(std::aligned_alloc(64, static_cast<size_t>(want)));
    HVD_CHECK(data_ != nullptr) << "out of memory allocating a " << want << "-byte fusion buffer";
    capacity_ = want;
    ++allocations_;
  }
  return data_.get();
}

void FusionBuffer::SetThreshold(int64_t threshold_bytes) {
  if (threshold_bytes == threshold_) return;
  threshold_ = threshold_bytes;
  data_.reset();
  capacity_ = 0;
}

}  // namespace hvd::runtime
