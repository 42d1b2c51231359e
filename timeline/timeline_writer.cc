#include "timeline/timeline_writer.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "common/logging.h"

namespace hvd::timeline {
namespace {

// Writes are packed so that none crosses a multiple of this (the smallest page size, so
// also every folio boundary): the kernel only stops a write for a fatal signal between
// pages, so such a write lands completely or not at all.
constexpr int64_t kPageBytes = 4096;
// The region of spaces the records are written into: first this much, then as much again as
// the file holds, at most kMaxGrowth at a time.
constexpr int64_t kFirstRegion = 64 << 10;
constexpr int64_t kMaxGrowth = 4 << 20;
// Records are written in runs of up to this many bytes (whole pages of records, see Append).
constexpr int64_t kChunkBytes = 64 << 10;

int64_t PageStart(int64_t offset) { return offset / kPageBytes * kPageBytes; }

// Where the closing "\n]\n" goes for spaces that reach at least `end`: in the last bytes of a
// page, so that writing it (or the spaces over it) never crosses a page boundary.
int64_t TailFor(int64_t end) {
  return PageStart(end + static_cast<int64_t>(kTimelineTail.size()) + kPageBytes - 1) -
         static_cast<int64_t>(kTimelineTail.size());
}

// Writes all of `data` at `offset`, retrying short writes and EINTR.
bool PwriteAll(int fd, std::string_view data, int64_t offset) {
  while (!data.empty()) {
    ssize_t n = ::pwrite(fd, data.data(), data.size(), offset);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
    offset += n;
  }
  return true;
}

}  // namespace

TimelineWriter::TimelineWriter(size_t queue_capacity) : queue_(queue_capacity) {}

TimelineWriter::~TimelineWriter() { Close(); }

Status TimelineWriter::Open(const std::string& path, const std::vector<TraceRecord>& header) {
  HVD_CHECK(fd_ < 0 && !thread_.joinable()) << "TimelineWriter opened twice";
  path_ = path;
  fd_ = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    return Status::IoError(
        fmt::format("cannot open timeline file '{}': {}", path, std::strerror(errno)));
  }
  std::string body = "[";
  for (const TraceRecord& r : header) {
    body += (any_record_ ? ",\n" : "\n") + ToJson(r);
    any_record_ = true;
  }
  tail_offset_ = static_cast<int64_t>(body.size());
  region_end_ = TailFor(tail_offset_ + kFirstRegion);
  body.resize(static_cast<size_t>(region_end_), ' ');
  body += kTimelineTail;
  if (!PwriteAll(fd_, body, 0)) {
    Status s = Status::IoError(
        fmt::format("cannot write timeline file '{}': {}", path, std::strerror(errno)));
    ::close(fd_);
    fd_ = -1;
    return s;
  }
  written_.store(header.size(), std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(producer_mu_);
    open_ = true;
  }
  thread_ = std::thread([this] { Loop(); });
  return Status::OK();
}

bool TimelineWriter::Enqueue(TraceRecord record) {
  {
    std::lock_guard<std::mutex> lock(producer_mu_);
    if (!open_ || failed()) return false;
    if (!queue_.TryPush(record)) {
      dropped_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
  }
  return true;  // no wake-up: the writer polls (see Loop), so a push is never a system call
}

void TimelineWriter::Close() {
  {
    std::lock_guard<std::mutex> lock(producer_mu_);
    if (!open_) return;
    open_ = false;
  }
  {
    std::lock_guard<std::mutex> lock(stop_mu_);
    stopping_.store(true, std::memory_order_release);
  }
  stop_cv_.notify_one();
  thread_.join();
  const uint64_t dropped = dropped_.load();
  if (dropped > 0) {
    HVD_LOG_WARNING(
        "timeline '{}': dropped {} events because the writer queue ({} records) was full", path_,
        dropped, queue_.capacity());
  }
  ::close(fd_);
  fd_ = -1;
}

Status TimelineWriter::write_status() const {
  std::lock_guard<std::mutex> lock(status_mu_);
  return write_status_;
}

void TimelineWriter::Fail() {
  failed_ = true;
  std::lock_guard<std::mutex> lock(status_mu_);
  write_status_ = Status::IoError(
      fmt::format("cannot write timeline file '{}': {}", path_, std::strerror(errno)));
  // The Timeline stops recording when it sees failed() (the job goes on without a timeline);
  // the file keeps the records written so far and stays valid JSON.
  failed_flag_.store(true, std::memory_order_relaxed);
  HVD_LOG_ERROR("timeline disabled: {}", write_status_.message());
}

void TimelineWriter::Flush() {
  if (chunk_.empty()) return;
  if (!failed_) {
    if (PwriteAll(fd_, chunk_, tail_offset_)) {
      tail_offset_ += static_cast<int64_t>(chunk_.size());
    } else {
      Fail();
    }
  }
  written_.fetch_add(chunk_records_, std::memory_order_relaxed);
  chunk_.clear();
  chunk_records_ = 0;
}

// New spaces and closing bracket past the old one first (a tear there only leaves spaces after
// the old bracket: still valid), then the old bracket becomes spaces (3 bytes inside one page).
// Between the two the file has two closing brackets (the class comment's one window).
void TimelineWriter::Grow(int64_t end) {
  const int64_t old_tail = region_end_;
  const int64_t old_eof = old_tail + static_cast<int64_t>(kTimelineTail.size());
  const int64_t growth = std::clamp(old_eof, kFirstRegion, kMaxGrowth);
  region_end_ = TailFor(std::max(end, old_tail + growth));
  if (failed_) return;  // nothing more is written
  std::string more(static_cast<size_t>(region_end_ - old_eof), ' ');
  more += kTimelineTail;
  if (!PwriteAll(fd_, more, old_eof) ||
      !PwriteAll(fd_, std::string(kTimelineTail.size(), ' '), old_tail)) {
    Fail();
  }
}

// Packs records so that none crosses a kPageBytes page of the file (see the class comment): a
// record that cannot fit in what is left of a page starts at the next one, the rest of the page
// staying spaces (written as spaces again: the buffer runs on across pages, and one write
// covers up to kChunkBytes). A write that a SIGKILL stops between two pages leaves whole
// records only.
void TimelineWriter::Append(const TraceRecord& record) {
  piece_.clear();
  piece_ += any_record_ ? ",\n" : "\n";
  AppendJson(&piece_, record);
  any_record_ = true;
  const int64_t size = static_cast<int64_t>(piece_.size());
  const int64_t at = tail_offset_ + static_cast<int64_t>(chunk_.size());
  // Only a record longer than a page crosses a boundary (from a page start).
  const int64_t start = at % kPageBytes + size > kPageBytes ? PageStart(at + kPageBytes - 1) : at;
  if (start + size > region_end_) {
    // The spaces run out: what is buffered goes first, then the region grows (the padding up to
    // `start` would have covered the closing bracket; those bytes are spaces after Grow).
    Flush();
    tail_offset_ = start;
    Grow(start + size);
  } else if (start != at) {
    chunk_.append(static_cast<size_t>(start - at), ' ');
  }
  chunk_ += piece_;
  ++chunk_records_;
  if (static_cast<int64_t>(chunk_.size()) >= kChunkBytes || size > kPageBytes) Flush();
}

// Polls the queue: 1 ms after a batch, backing off to 16 ms while idle. Waking the writer
// per record (a futex wake and a context switch each) made the timeline cost a 2-core job
// tens of percent; batches also mean fewer, larger writes.
void TimelineWriter::Loop() {
  constexpr std::chrono::milliseconds kMinPoll{1}, kMaxPoll{16};
  std::chrono::milliseconds poll = kMinPoll;
  TraceRecord record;
  for (;;) {
    const bool stopping = stopping_.load(std::memory_order_acquire);
    bool any = false;
    while (queue_.TryPop(&record)) {
      Append(record);
      any = true;
    }
    Flush();
    if (stopping) break;  // queue drained after the stop was requested
    poll = any ? kMinPoll : std::min(poll * 2, kMaxPoll);
    std::unique_lock<std::mutex> lock(stop_mu_);
    stop_cv_.wait_for(lock, poll, [&] { return stopping_.load(std::memory_order_acquire); });
  }
  TraceRecord summary;
  summary.phase = 'M';
  summary.name = "hvd_dropped_events";
  summary.args.emplace_back("dropped_events", static_cast<int64_t>(dropped_.load()));
  Append(summary);
  Flush();
}

}  // namespace hvd::timeline
