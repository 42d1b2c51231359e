#include "timeline/timeline_repair.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string_view>

namespace hvd::timeline {
namespace {

constexpr std::string_view kTail = "\n]\n";
constexpr int64_t kBlock = 64 << 10;

// Where the old closing bracket of a torn file starts, given a reader of the byte at an offset;
// -1 when the file (of `size` bytes) is not torn. The file must end in kTail, and the last
// byte before the spaces ahead of it must end another kTail.
template <typename ByteAt>
int64_t OldTailOf(int64_t size, ByteAt byte_at) {
  const int64_t tail = static_cast<int64_t>(kTail.size());
  if (size < 2 * tail) return -1;
  for (int64_t i = 0; i < tail; ++i) {
    int c = byte_at(size - tail + i);
    if (c < 0 || c != kTail[static_cast<size_t>(i)]) return -1;
  }
  int64_t last = size - tail - 1;
  for (;; --last) {
    if (last < 0) return -1;
    int c = byte_at(last);
    if (c < 0) return -1;
    if (c != ' ') break;
  }
  if (last + 1 < tail) return -1;
  for (int64_t i = 0; i < tail; ++i) {
    if (byte_at(last + 1 - tail + i) != kTail[static_cast<size_t>(i)]) return -1;
  }
  return last + 1 - tail;
}

std::string Errno(const std::string& what, const std::string& path) {
  return fmt::format("cannot {} timeline file '{}': {}", what, path, std::strerror(errno));
}

}  // namespace

bool RepairTornTimelineText(std::string* text) {
  const int64_t old_tail = OldTailOf(static_cast<int64_t>(text->size()), [&](int64_t at) {
    return static_cast<int>(static_cast<unsigned char>((*text)[static_cast<size_t>(at)]));
  });
  if (old_tail < 0) return false;
  text->replace(static_cast<size_t>(old_tail), kTail.size(), kTail.size(), ' ');
  return true;
}

Result<bool> RepairTornTimelineFile(const std::string& path) {
  // Read-only until a repair is due, so checking a valid read-only file is no error.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::IoError(Errno("open", path));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    Status s = Status::IoError(Errno("stat", path));
    ::close(fd);
    return s;
  }
  // Reads back from the end a block at a time; the spaces between the two brackets are at most
  // one growth (4 MiB).
  std::string block;
  int64_t block_start = -1;
  bool read_failed = false;
  auto byte_at = [&](int64_t at) -> int {
    if (block_start < 0 || at < block_start ||
        at >= block_start + static_cast<int64_t>(block.size())) {
      const int64_t end = std::min<int64_t>(st.st_size, at + 1 + 8);  // the tail, then back
      block_start = std::max<int64_t>(0, end - kBlock);
      block.resize(static_cast<size_t>(end - block_start));
      const ssize_t n = ::pread(fd, block.data(), block.size(), block_start);
      if (n != static_cast<ssize_t>(block.size())) {
        read_failed = true;
        block_start = -1;
        return -1;
      }
    }
    return static_cast<unsigned char>(block[static_cast<size_t>(at - block_start)]);
  };
  const int64_t old_tail = OldTailOf(static_cast<int64_t>(st.st_size), byte_at);
  Result<bool> result = false;
  if (read_failed) {
    result = Status::IoError(Errno("read", path));
  } else if (old_tail >= 0) {
    const std::string spaces(kTail.size(), ' ');
    const int wfd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (wfd >= 0 && ::pwrite(wfd, spaces.data(), spaces.size(), old_tail) ==
                        static_cast<ssize_t>(spaces.size())) {
      result = true;
    } else {
      result = Status::IoError(Errno("repair", path));
    }
    if (wfd >= 0) ::close(wfd);
  }
  ::close(fd);
  return result;
}

}  // namespace hvd::timeline
