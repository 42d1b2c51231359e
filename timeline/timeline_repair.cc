#include "timeline/timeline_repair.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string_view>

#include "timeline/timeline_writer.h"

namespace hvd::timeline {
namespace {

constexpr int64_t kBlock = 64 << 10;

// Where the old closing bracket of a torn file starts, given a reader of the byte at an offset;
// -1 when the file (of `size` bytes) is not torn. The file must end in kTimelineTail, and the last
// byte before the spaces ahead of it must end another kTimelineTail.
template <typename ByteAt>
int64_t OldTailOf(int64_t size, ByteAt byte_at) {
  const int64_t tail = static_cast<int64_t>(kTimelineTail.size());
  if (size < 2 * tail) return -1;
  for (int64_t i = 0; i < tail; ++i) {
    int c = byte_at(size - tail + i);
    if (c < 0 || c != kTimelineTail[static_cast<size_t>(i)]) return -1;
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
    if (byte_at(last + 1 - tail + i) != kTimelineTail[static_cast<size_t>(i)]) return -1;
  }
  return last + 1 - tail;
}

std::string Errno(const std::string& what, const std::string& path) {
  return fmt::format("cannot {} timeline file '{}': {}", what, path, std::strerror(errno));
}

// Where the events of a JSON array that `text` starts (after whitespace) end: the end of each
// complete element, counted, until the text ends or the array closes.
struct ArrayScan {
  bool array = false;    // the text starts with "["
  bool closed = false;   // the array's "]" was reached
  int64_t open_end = 0;  // just past the "["
  int64_t complete_end = 0;
  int64_t events = 0;
};

ArrayScan ScanArray(std::string_view text) {
  ArrayScan scan;
  size_t i = text.find_first_not_of(" \t\r\n");
  if (i == std::string_view::npos || text[i] != '[') return scan;
  scan.array = true;
  scan.open_end = scan.complete_end = static_cast<int64_t>(i + 1);
  int depth = 1;
  bool in_string = false, escaped = false;
  for (++i; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0) {
        scan.closed = true;
        return scan;
      }
      if (depth == 1) {
        scan.complete_end = static_cast<int64_t>(i + 1);
        ++scan.events;
      }
    }
  }
  return scan;
}

// An array of events, or an object holding one under "traceEvents".
bool IsTrace(const nlohmann::json& trace) {
  if (trace.is_array()) return true;
  if (!trace.is_object()) return false;
  auto events = trace.find("traceEvents");
  return events != trace.end() && events->is_array();
}

}  // namespace

TimelineCheck CheckTimelineText(std::string_view text) {
  TimelineCheck check;
  check.size = static_cast<int64_t>(text.size());
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) {
    check.shape = TimelineShape::kEmpty;
    return check;
  }
  // JSON has no NUL byte, but nlohmann's parser takes one outside a string for the end of its
  // input: "[]" followed by a NUL and anything parsed as complete, and a repair of such a file
  // was still not a timeline (found by the fuzz target "timeline"). A file a crash left
  // zero-filled, or no text at all: named, never written to.
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    check.detail = fmt::format("not JSON (a NUL byte at byte {})", nul + 1);
    return check;
  }
  if (OldTailOf(check.size, [&](int64_t at) {
        return static_cast<int>(static_cast<unsigned char>(text[static_cast<size_t>(at)]));
      }) >= 0) {
    // The writer's torn form only when mending its brackets leaves a trace: a file that merely
    // ends like one, or is damaged inside as well, is named and never written to (the fuzz
    // target "timeline" found `repair` rewriting such a file into one that still did not parse).
    std::string mended(text);
    RepairTornTimelineText(&mended);
    if (IsTrace(nlohmann::json::parse(mended, nullptr, /*allow_exceptions=*/false))) {
      check.shape = TimelineShape::kTornGrowth;
      return check;
    }
  }
  // One parse: its value, or its complaint and whether that is that the text ended.
  nlohmann::json trace;
  std::string error;
  bool at_end = false;
  try {
    trace = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    error = e.what();
    at_end = e.byte > text.size();  // 1-based: one past the end when the text ran out
  } catch (const nlohmann::json::exception& e) {
    // A number beyond a double (1E400: out_of_range 406) escaped the catch above and ended
    // `hvd-timeline repair` with std::terminate (found by the fuzz target "timeline").
    error = e.what();
  }
  if (error.empty()) {
    if (IsTrace(trace)) {
      check.shape = TimelineShape::kComplete;
    } else {
      check.detail = trace.is_object()
                         ? "a JSON object without a \"traceEvents\" array"
                         : std::string("a JSON ") + trace.type_name() + ", not an array of events";
    }
    return check;
  }
  const ArrayScan scan = ScanArray(text);
  // Damaged only at its end: the complete events, closed, parse.
  const std::string kept =
      std::string(text.substr(0, static_cast<size_t>(scan.complete_end))) + "\n]";
  if (!scan.array || scan.closed || !at_end || !nlohmann::json::accept(kept)) {
    check.detail = "not JSON (" + error + ")";
    return check;
  }
  check.events = scan.events;
  check.complete_end = scan.complete_end;
  const std::string_view rest = text.substr(static_cast<size_t>(scan.complete_end));
  const size_t comma = rest.find_first_not_of(" \t\r\n");
  const bool unclosed = comma == std::string_view::npos ||
                        (rest[comma] == ',' &&
                         rest.find_first_not_of(" \t\r\n", comma + 1) == std::string_view::npos);
  check.shape = unclosed ? TimelineShape::kUnclosed : TimelineShape::kTruncated;
  return check;
}

bool Repairable(const TimelineCheck& check) {
  return check.shape == TimelineShape::kTornGrowth || check.shape == TimelineShape::kUnclosed ||
         check.shape == TimelineShape::kTruncated;
}

bool RepairTimelineText(const TimelineCheck& check, std::string* text) {
  if (check.shape == TimelineShape::kTornGrowth) return RepairTornTimelineText(text);
  if (!Repairable(check)) return false;
  text->resize(static_cast<size_t>(check.complete_end));
  text->append(kTimelineTail);
  return true;
}

Result<std::string> ReadTimelineFile(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return Status::InvalidArgument(fmt::format("'{}' is a directory, not a timeline file", path));
  }
  // A device (/dev/zero) never ends: read on, it grew memory until the OOM killer (until
  // 2026-12-01). Files and pipes (a shell's <(...)) are read.
  if (::stat(path.c_str(), &st) == 0 && (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode))) {
    return Status::InvalidArgument(fmt::format("'{}' is a device, not a timeline file", path));
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    const int err = errno;
    const std::string message = fmt::format("cannot open '{}': {}", path, std::strerror(err));
    return err == ENOENT ? Status::NotFound(message) : Status::IoError(message);
  }
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) return Status::IoError(fmt::format("cannot read '{}'", path));
  return text;
}

Result<TimelineCheck> RepairTimelineFile(const std::string& path) {
  HVD_ASSIGN_OR_RETURN(const std::string text, ReadTimelineFile(path));
  const TimelineCheck check = CheckTimelineText(text);
  if (check.shape == TimelineShape::kTornGrowth) {
    HVD_ASSIGN_OR_RETURN(bool repaired, RepairTornTimelineFile(path));
    (void)repaired;  // the check just saw it torn
    return check;
  }
  if (!Repairable(check)) return check;
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  const bool ok = fd >= 0 && ::ftruncate(fd, check.complete_end) == 0 &&
                  ::pwrite(fd, kTimelineTail.data(), kTimelineTail.size(), check.complete_end) ==
                      static_cast<ssize_t>(kTimelineTail.size());
  Status s = ok ? Status::OK() : Status::IoError(Errno("repair", path));
  if (fd >= 0) ::close(fd);
  if (!s.ok()) return s;
  return check;
}

bool RepairTornTimelineText(std::string* text) {
  const int64_t old_tail = OldTailOf(static_cast<int64_t>(text->size()), [&](int64_t at) {
    return static_cast<int>(static_cast<unsigned char>((*text)[static_cast<size_t>(at)]));
  });
  if (old_tail < 0) return false;
  text->replace(static_cast<size_t>(old_tail), kTimelineTail.size(), kTimelineTail.size(), ' ');
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
    const std::string spaces(kTimelineTail.size(), ' ');
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
