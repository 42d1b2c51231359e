// The memory of runtime-allocated outputs (core/execution/output_memory.h): blocks given back are
// handed out again for the same size class, within the cache's bounds, from any thread.
#include "runtime/core/execution/output_memory.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace hvd::runtime {
namespace {

class OutputMemoryTest : public ::testing::Test {
 protected:
  // The cache is the process's: every test starts from an empty one at the default limit.
  void SetUp() override {
    ReleaseCachedOutputs();
    SetOutputCacheBytes(kDefaultOutputCacheBytes);
  }
  void TearDown() override { SetUp(); }
};

TEST_F(OutputMemoryTest, EveryOutputIsAlignedAndWritable) {
  for (int64_t bytes : {int64_t{0}, int64_t{1}, int64_t{63}, int64_t{4096}, kMinCachedBytes - 1,
                        kMinCachedBytes, int64_t{3} << 20}) {
    char* p = static_cast<char*>(AllocOutput(bytes));
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 0xab, static_cast<size_t>(bytes));
    FreeOutput(p);
  }
  FreeOutput(nullptr);  // nothing
}

TEST_F(OutputMemoryTest, AGivenBackBlockServesTheNextOutputOfItsSizeClass) {
  const int64_t reused = GetOutputCacheStats().reused;
  void* a = AllocOutput(100000);
  FreeOutput(a);
  EXPECT_EQ(GetOutputCacheStats().blocks, 1);
  // 100000 and 110000 bytes both round up to 114688 (a quarter of 2^16 steps): the same block.
  void* b = AllocOutput(110000);
  EXPECT_EQ(b, a);
  EXPECT_EQ(GetOutputCacheStats().reused, reused + 1);
  EXPECT_EQ(GetOutputCacheStats().blocks, 0);
  // Another class does not take it.
  FreeOutput(b);
  void* c = AllocOutput(200000);
  EXPECT_NE(c, a);
  EXPECT_EQ(GetOutputCacheStats().blocks, 1);
  FreeOutput(c);
  EXPECT_EQ(GetOutputCacheStats().blocks, 2);
}

TEST_F(OutputMemoryTest, SmallBlocksAreNotKept) {
  FreeOutput(AllocOutput(kMinCachedBytes - 1));
  FreeOutput(AllocOutput(16));
  EXPECT_EQ(GetOutputCacheStats().blocks, 0);
  EXPECT_EQ(GetOutputCacheStats().bytes, 0);
}

TEST_F(OutputMemoryTest, TheLimitKeepsTheMostRecentBlocks) {
  const int64_t block = int64_t{512} << 10;  // its own size class
  SetOutputCacheBytes(2 * block);
  void* p[3];
  for (void*& q : p) q = AllocOutput(block);
  for (void* q : p) FreeOutput(q);  // the oldest of three goes
  EXPECT_EQ(GetOutputCacheStats().blocks, 2);
  EXPECT_EQ(GetOutputCacheStats().bytes, 2 * block);
  // Handed out most recent first.
  void* again = AllocOutput(block);
  EXPECT_EQ(again, p[2]);
  FreeOutput(again);
  // Lowering the limit frees what no longer fits; a block over the limit is never kept.
  SetOutputCacheBytes(block);
  EXPECT_EQ(GetOutputCacheStats().blocks, 1);
  FreeOutput(AllocOutput(2 * block));
  EXPECT_EQ(GetOutputCacheStats().blocks, 1);
  SetOutputCacheBytes(0);
  EXPECT_EQ(GetOutputCacheStats().blocks, 0);
  FreeOutput(AllocOutput(block));
  EXPECT_EQ(GetOutputCacheStats().blocks, 0);
}

TEST_F(OutputMemoryTest, AtMost256BlocksAreKept) {
  std::vector<void*> blocks;
  for (int i = 0; i < 300; ++i) blocks.push_back(AllocOutput(kMinCachedBytes));
  for (void* b : blocks) FreeOutput(b);
  EXPECT_EQ(GetOutputCacheStats().blocks, 256);
  ReleaseCachedOutputs();
  EXPECT_EQ(GetOutputCacheStats().blocks, 0);
  EXPECT_EQ(GetOutputCacheStats().bytes, 0);
}

// Memory the runtime did not return is left alone (logged), not free()d: here the 64 bytes
// before the pointer are ours and zero (no header), and freeing `p` would abort in glibc or
// double-free `buffer` below. (Until 2026-11-25 such memory was free()d.)
TEST_F(OutputMemoryTest, MemoryThatIsNotAnOutputIsLeftAlone) {
  auto* buffer = static_cast<char*>(std::calloc(1, 128));
  void* p = buffer + 64;
  FreeOutput(p);
  EXPECT_EQ(GetOutputCacheStats().blocks, 0);
  std::free(buffer);
}

// Outputs are allocated by the thread running the cycle and given back by the framework's
// (hvd.torch frees when a tensor dies): both at once, many times, every block's contents its
// own until it is given back.
TEST_F(OutputMemoryTest, AllocatedOnOneThreadGivenBackOnAnother) {
  constexpr int kRounds = 2000;
  std::atomic<void*> slot{nullptr};
  std::atomic<bool> failed{false};
  std::thread freer([&] {
    for (int i = 0; i < kRounds; ++i) {
      void* p;
      while ((p = slot.exchange(nullptr)) == nullptr) std::this_thread::yield();
      const auto* bytes = static_cast<const unsigned char*>(p);
      if (bytes[0] != static_cast<unsigned char>(i) ||
          bytes[99999] != static_cast<unsigned char>(i))
        failed = true;
      FreeOutput(p);
    }
  });
  for (int i = 0; i < kRounds; ++i) {
    auto* p = static_cast<unsigned char*>(AllocOutput(100000 + (i % 3) * 40000));
    p[0] = p[99999] = static_cast<unsigned char>(i);
    while (slot.load() != nullptr) std::this_thread::yield();
    slot.store(p);
  }
  freer.join();
  EXPECT_FALSE(failed);
  EXPECT_GT(GetOutputCacheStats().reused, kRounds / 2);
}

// A device-output free installed by a GPU backend (AddDeviceOutputFree): it stands for memory
// without the host header, so it must be asked before the header is read.
struct DeviceFrees {
  static inline char block[64];
  static inline std::atomic<int> own{0}, caller{0};
  static inline std::atomic<void*> last_stream{nullptr};
  static bool Free(void* data, bool on_caller_stream, void* stream) {
    if (data != block) return false;
    (on_caller_stream ? caller : own)++;
    last_stream = stream;
    return true;
  }
};

// Given a backend's device output, then FreeOutput gives it back on its own stream (an output
// the handle frees, never taken), FreeOutputOn on the caller's stream (hvd_free_on_stream), and
// host outputs still go to the host cache.
TEST_F(OutputMemoryTest, DeviceOutputsGoBackToTheirBackendOnTheRightStream) {
  AddDeviceOutputFree(&DeviceFrees::Free);
  AddDeviceOutputFree(&DeviceFrees::Free);  // installed once however often a runtime starts
  FreeOutput(DeviceFrees::block);
  EXPECT_EQ(DeviceFrees::own.load(), 1);
  int stream = 0;
  FreeOutputOn(DeviceFrees::block, &stream);
  EXPECT_EQ(DeviceFrees::caller.load(), 1);
  EXPECT_EQ(DeviceFrees::last_stream.load(), &stream);
  void* host = AllocOutput(64 << 10);
  const int64_t kept = GetOutputCacheStats().blocks;
  FreeOutputOn(host, &stream);
  EXPECT_EQ(GetOutputCacheStats().blocks, kept + 1);
  EXPECT_EQ(DeviceFrees::caller.load(), 1);
}

}  // namespace
}  // namespace hvd::runtime
