#include "runtime/core/execution/output_memory.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "common/logging.h"

namespace hvd::runtime {
namespace {

// Each block starts with a header (its size class) one cache line before the caller's data,
// so FreeOutput knows what it is given back and the data stays 64-byte aligned.
constexpr size_t kHeaderBytes = 64;
constexpr uint64_t kMagic = 0x68766423'6f757470;  // "hvd#outp"
// Blocks kept at most, whatever their bytes (a search is a scan of them).
constexpr size_t kMaxKept = 256;

struct Header {
  uint64_t magic;
  int64_t capacity;
};

// `bytes` rounded up to a quarter of its power of two (at most 25 % more); small blocks are
// never kept, so their size is exact.
int64_t SizeClass(int64_t bytes) {
  if (bytes < kMinCachedBytes) return bytes;
  const int k = std::bit_width(static_cast<uint64_t>(bytes)) - 1;  // 2^k <= bytes < 2^(k+1)
  const int64_t step = int64_t{1} << (k - 2);
  return (bytes + step - 1) / step * step;
}

struct Block {
  char* base;
  int64_t capacity;
};

class Cache {
 public:
  char* Take(int64_t capacity) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = kept_.size(); i-- > 0;) {  // the most recent first: its pages are warm
      if (kept_[i].capacity != capacity) continue;
      char* base = kept_[i].base;
      kept_.erase(kept_.begin() + static_cast<std::ptrdiff_t>(i));
      bytes_ -= capacity;
      ++reused_;
      return base;
    }
    return nullptr;
  }
  // Keeps `b` when it fits, dropping the oldest blocks to make room; frees what is not kept.
  void Give(Block b) {
    std::vector<char*> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (b.capacity > limit_) {
        drop.push_back(b.base);
      } else {
        kept_.push_back(b);
        bytes_ += b.capacity;
        Trim(&drop);
      }
    }
    for (char* p : drop) std::free(p);
  }
  void SetLimit(int64_t limit) {
    std::vector<char*> drop;
    {
      std::lock_guard<std::mutex> lock(mu_);
      limit_ = std::max<int64_t>(limit, 0);
      Trim(&drop);
    }
    for (char* p : drop) std::free(p);
  }
  void Clear() {
    std::vector<Block> kept;
    {
      std::lock_guard<std::mutex> lock(mu_);
      kept.swap(kept_);
      bytes_ = 0;
    }
    for (const Block& b : kept) std::free(b.base);
  }
  OutputCacheStats Stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {static_cast<int64_t>(kept_.size()), bytes_, reused_};
  }

 private:
  void Trim(std::vector<char*>* drop) {
    size_t n = 0;
    while (n < kept_.size() && (bytes_ > limit_ || kept_.size() - n > kMaxKept)) {
      bytes_ -= kept_[n].capacity;
      drop->push_back(kept_[n].base);
      ++n;
    }
    kept_.erase(kept_.begin(), kept_.begin() + static_cast<std::ptrdiff_t>(n));
  }

  std::mutex mu_;
  std::vector<Block> kept_;  // oldest first
  int64_t bytes_ = 0;
  int64_t limit_ = kDefaultOutputCacheBytes;
  int64_t reused_ = 0;
};

// Never destroyed: hvd_free may come from another library's static destructor (Python's
// interpreter teardown freeing its last tensors) after this one's would have run.
Cache& TheCache() {
  static Cache* cache = new Cache;
  return *cache;
}

using DeviceFree = bool (*)(void* data, bool on_caller_stream, void* stream);

// AddDeviceOutputFree's functions: filled in order, never removed, so readers need no lock.
std::array<std::atomic<DeviceFree>, kMaxDeviceOutputFrees> device_frees{};

bool FreedOnDevice(void* data, bool on_caller_stream, void* stream) {
  for (auto& slot : device_frees) {
    const DeviceFree free = slot.load(std::memory_order_acquire);
    if (free == nullptr) return false;
    if (free(data, on_caller_stream, stream)) return true;
  }
  return false;
}

void FreeHost(void* data) {
  char* base = static_cast<char*>(data) - kHeaderBytes;
  const Header h = *reinterpret_cast<const Header*>(base);
  if (h.magic != kMagic) {
    // Not memory AllocOutput returned (a caller's mistake, as free() of memory malloc did not
    // return; the header read above is already out of bounds for most such memory). Until
    // 2026-11-25 it was free()d, which for memory of anyone else's corrupts their heap.
    HVD_LOG_ERROR(
        "hvd_free({}): not an output the runtime returned (hvd_output); left alone, not freed",
        data);
    return;
  }
  if (h.capacity < kMinCachedBytes) {
    std::free(base);
    return;
  }
  TheCache().Give({base, h.capacity});
}

}  // namespace

void AddDeviceOutputFree(DeviceFree free) {
  static std::mutex mu;  // adders only; FreedOnDevice reads the slots without it
  std::lock_guard<std::mutex> lock(mu);
  for (auto& slot : device_frees) {
    const DeviceFree there = slot.load(std::memory_order_relaxed);
    if (there == free) return;
    if (there == nullptr) {
      slot.store(free, std::memory_order_release);
      return;
    }
  }
  HVD_LOG_ERROR(
      "more than {} kinds of GPU backend in one process: the outputs of the last one "
      "will not be freed",
      kMaxDeviceOutputFrees);
}

void* AllocOutput(int64_t bytes) {
  const int64_t capacity = SizeClass(std::max<int64_t>(bytes, 1));
  char* base = capacity >= kMinCachedBytes ? TheCache().Take(capacity) : nullptr;
  if (base == nullptr) {
    void* p = nullptr;
    if (posix_memalign(&p, kHeaderBytes, kHeaderBytes + static_cast<size_t>(capacity)) != 0) {
      throw std::bad_alloc();
    }
    base = static_cast<char*>(p);
    *reinterpret_cast<Header*>(base) = {kMagic, capacity};
  }
  return base + kHeaderBytes;
}

void FreeOutput(void* data) {
  if (data == nullptr || FreedOnDevice(data, false, nullptr)) return;
  FreeHost(data);
}

void FreeOutputOn(void* data, void* stream) {
  if (data == nullptr || FreedOnDevice(data, true, stream)) return;
  FreeHost(data);
}

void SetOutputCacheBytes(int64_t bytes) { TheCache().SetLimit(bytes); }

void ReleaseCachedOutputs() { TheCache().Clear(); }

OutputCacheStats GetOutputCacheStats() { return TheCache().Stats(); }

}  // namespace hvd::runtime
