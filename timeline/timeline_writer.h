#ifndef HVD_TIMELINE_TIMELINE_WRITER_H_
#define HVD_TIMELINE_TIMELINE_WRITER_H_

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/status.h"
#include "timeline/spsc_queue.h"
#include "timeline/trace_record.h"

// TimelineWriter owns one trace file and the thread that writes it.
//
// Producers hand records to Enqueue(), which never blocks on I/O or on the writer (and makes
// no system call): when the bounded queue is full the record is dropped and counted. The
// writer thread polls the queue (every 1 ms while busy, up to 16 ms while idle) and drains it.
//
// The file is a JSON array that is complete at every moment: "[" and the records, then a region
// of spaces (whitespace inside the array) ending in the closing "\n]\n". Records are written
// into the spaces, so a write never touches the closing bracket. A SIGKILL can tear a write only
// where it crosses a page boundary (the kernel checks for fatal signals between pages), so no
// record crosses a 4 KiB page: one that does not fit in the rest of a page starts at the next
// page (the rest stays spaces), and a write of several pages (up to 64 KiB at once) that is
// torn between two of them leaves whole records only. When the spaces run out the region grows:
// spaces and a new "\n]\n" are written past the end, then the old closing bracket becomes
// spaces. Between those two writes (once per growth: the region doubles from 64 KiB up to
// steps of 4 MiB) the file has two closing brackets; that is the one moment a SIGKILL leaves a
// file a strict JSON parser refuses (everything up to the first "]" is intact); such a file is
// mended afterwards (timeline_repair.h: hvdrun, hvd-agent, hvd-timeline). Only a single
// record longer than a page still crosses a boundary. Close() drains what is queued, appends a
// metadata record
// {"name":"hvd_dropped_events","ph":"M","args":{"dropped_events":N}}, logs a warning if
// N > 0, and closes the file.
//
// Threading: Enqueue() may be called from any thread (producers are serialised by a
// mutex that the writer thread never takes). Open()/Close() are for one controlling
// thread. One writer per file; a writer is opened at most once.

namespace hvd::timeline {

// What a TimelineWriter's file ends in: the closing bracket of its JSON array.
inline constexpr std::string_view kTimelineTail = "\n]\n";

class TimelineWriter {
 public:
  explicit TimelineWriter(size_t queue_capacity);
  ~TimelineWriter();  // Close()
  TimelineWriter(const TimelineWriter&) = delete;
  TimelineWriter& operator=(const TimelineWriter&) = delete;

  // Creates or truncates `path`, writes `header` synchronously (so it is never dropped)
  // and starts the writer thread. Errors name the path.
  Status Open(const std::string& path, const std::vector<TraceRecord>& header);

  // False when the record was not queued: the queue is full (counted in dropped()) or the
  // writer is not open or failed (not counted).
  bool Enqueue(TraceRecord record);

  // Idempotent. After it returns every record accepted by Enqueue() is in the file.
  void Close();

  uint64_t dropped() const { return dropped_.load(std::memory_order_relaxed); }
  // Adds events dropped before they reached this writer (e.g. on another rank).
  void CountDropped(uint64_t n) { dropped_.fetch_add(n, std::memory_order_relaxed); }
  uint64_t written() const { return written_.load(std::memory_order_relaxed); }
  const std::string& path() const { return path_; }
  // The first write error, if any (the writer keeps draining after one, discarding).
  Status write_status() const;
  // A write failed: nothing more is written (Enqueue refuses, uncounted).
  bool failed() const { return failed_flag_.load(std::memory_order_relaxed); }

 private:
  void Loop();
  void Append(const TraceRecord& record);
  void Flush();
  // Makes the spaces reach at least `end` (see the class comment).
  void Grow(int64_t end);
  void Fail();

  SpscQueue<TraceRecord> queue_;
  std::string path_;
  int fd_ = -1;
  int64_t tail_offset_ = 0;  // where the next record goes (the records end here)
  int64_t region_end_ = 0;   // where the closing "\n]\n" starts: spaces from tail_offset_
  bool any_record_ = false;  // writer thread only (and Open before the thread starts)
  bool failed_ = false;      // writer thread only: a write failed, later records are discarded
  std::string chunk_;        // writer thread only: records to write at tail_offset_
  std::string piece_;        // writer thread only: the record being appended
  uint64_t chunk_records_ = 0;
  std::thread thread_;

  std::mutex producer_mu_;
  bool open_ = false;  // guarded by producer_mu_
  std::atomic<bool> stopping_{false};
  std::mutex stop_mu_;  // with stop_cv_: wakes the polling writer for Close()
  std::condition_variable stop_cv_;

  std::atomic<bool> failed_flag_{false};  // failed_, for the producers
  std::atomic<uint64_t> dropped_{0};
  std::atomic<uint64_t> written_{0};
  mutable std::mutex status_mu_;
  Status write_status_;  // guarded by status_mu_
};

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_TIMELINE_WRITER_H_
