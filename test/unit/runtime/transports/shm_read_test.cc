// ReadProcessMemory (runtime/transports/shm/shm_channel.h), the single-copy path's read of a
// peer's memory, here of this process's own (process_vm_readv allows it).
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <fstream>
#include <string>

#include "runtime/transports/shm/shm_channel.h"

namespace hvd::runtime {
namespace {

int64_t MemAvailableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemAvailable:") return kb * 1024;
  }
  return 0;
}

// One process_vm_readv moves at most 2 GiB less a page (MAX_RW_COUNT) and returns a short
// count past it: a read of 2 GiB + 1 MiB needs a second call. Until 2026-11-30 the short count
// failed the channel (an allreduce whose slice per member was over 2 GiB, a tensor over 4 GiB at
// 2 ranks, broke the communicator). Needs 4.2 GiB of memory: skipped on a machine with less
// than 8 GiB available.
TEST(ShmReadTest, AReadPastTheKernelsLimitPerCallGoesOn) {
  const size_t bytes = (size_t{2} << 30) + (size_t{1} << 20);
  if (MemAvailableBytes() < (int64_t{8} << 30)) GTEST_SKIP() << "needs 8 GiB available";
  auto map = [](size_t n) {
    void* p = mmap(nullptr, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    EXPECT_NE(p, MAP_FAILED);
    return static_cast<char*>(p);
  };
  char* src = map(bytes);
  char* dst = map(bytes);
  const size_t limit = 0x7ffff000;  // MAX_RW_COUNT on 4 KiB pages
  src[0] = 1;
  src[limit - 1] = 2;
  src[limit] = 3;
  src[bytes - 1] = 4;
  iovec local{dst, bytes}, remote{src, bytes};
  EXPECT_EQ(ReadProcessMemory(getpid(), &local, &remote, 1, bytes), static_cast<ssize_t>(bytes));
  EXPECT_EQ(dst[0], 1);
  EXPECT_EQ(dst[limit - 1], 2);
  EXPECT_EQ(dst[limit], 3);
  EXPECT_EQ(dst[bytes - 1], 4);
  munmap(src, bytes);
  munmap(dst, bytes);
}

// A read that stops short of the end because the rest is not mapped is a failure (EFAULT), not
// a loop: the first pair is read, the second's source was unmapped.
TEST(ShmReadTest, AReadIntoUnmappedMemoryFails) {
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  char* src = static_cast<char*>(
      mmap(nullptr, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
  ASSERT_NE(src, MAP_FAILED);
  munmap(src + page, page);
  char dst[2][64];
  iovec local[2] = {{dst[0], 64}, {dst[1], 64}};
  iovec remote[2] = {{src, 64}, {src + page, 64}};
  errno = 0;
  EXPECT_EQ(ReadProcessMemory(getpid(), local, remote, 2, 128), -1);
  EXPECT_EQ(errno, EFAULT);
  munmap(src, page);
}

}  // namespace
}  // namespace hvd::runtime
