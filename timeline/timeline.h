#ifndef HVD_TIMELINE_TIMELINE_H_
#define HVD_TIMELINE_TIMELINE_H_

#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "common/status.h"
#include "timeline/timeline_event.h"
#include "timeline/timeline_writer.h"

// Timeline turns runtime events into a Chrome trace (chrome://tracing, Perfetto) in the
// layout of Horovod's timeline (horovod/common/timeline.cc):
//
//   pid 0            header: process_name with args.start_time_since_epoch_in_micros,
//                    process_sort_index; CYCLE_START instants ("s":"g") when marking cycles
//   one row/tensor   process_name = tensor name; NEGOTIATE_<OP> B ... X "<rank>" per ready
//                    rank ... E; then <OP> B with nested activity B/E pairs and a final
//                    E whose args hold dtype, shape (and bytes when known)
//
// QUEUE spans (enqueue -> op start) overlap the coordinator's NEGOTIATE span, so they go on
// a row of their own: thread 1 ("QUEUE") of the tensor's process, as 'X' complete events
// whose args hold the op type.
//
// In all-ranks mode each RANK is a process row ("rank N", pid N + 1; pid 0 keeps the header)
// and each tensor two thread rows within it (tid 2k: "<tensor>", tid 2k+1: "<tensor> QUEUE"
// for the k-th tensor seen), so events gathered from every rank line up; a rank's times are
// shifted by SetClockOffset(rank, offset) onto the writer's clock. ts is microseconds since
// Start().
//
// Collecting (StartCollecting): no file; Record() keeps the events (bounded by
// queue_capacity, the rest dropped and counted) for TakeCollected(). Ranks other than 0 of
// an all-ranks job collect and ship their events to rank 0, whose Timeline writes them.
//
// Threading: every method is thread-safe. Record() and the helpers never block on I/O:
// records go to a TimelineWriter whose bounded queue drops (and counts) events when full.
// Start() while started switches to the new file (Stop() + Start()). Stop() may block
// while the writer drains.
namespace hvd::timeline {

// HVD_TIMELINE value that enables the start/stop API (hvd.start_timeline) without opening a
// file at init.
inline constexpr char kDynamicTimeline[] = "DYNAMIC";

struct TimelineOptions {
  bool mark_cycles = false;
  bool all_ranks = false;
  size_t queue_capacity = 1 << 16;  // records
};

class Timeline {
 public:
  // Microseconds since the Unix epoch; injectable for tests.
  using Clock = std::function<int64_t()>;
  static int64_t SystemClockMicros();

  explicit Timeline(Clock clock = SystemClockMicros, int local_rank = 0);
  ~Timeline();

  // Writes to `path` (a running file is closed once it is open; when it cannot be opened, the
  // error is returned and a running file goes on).
  Status Start(const std::string& path, const TimelineOptions& options = {});
  // Active without a file: events are kept for TakeCollected(). Stops a running file. Events
  // collected before a Stop() (or an earlier StartCollecting) are kept until taken: an
  // all-ranks rank ships them with its next shipment.
  void StartCollecting(const TimelineOptions& options = {});
  void Stop();
  bool active() const;
  // Events dropped by the current (or, after Stop, the last) file's writer.
  uint64_t dropped_events() const;
  // Collecting: moves the kept events out; returns how many were dropped since the last call.
  uint64_t TakeCollected(std::vector<TimelineEvent>* out);
  // Writing: counts `n` events dropped elsewhere (another rank's collector) in this file's
  // dropped-events total.
  void AddDropped(uint64_t n);
  // This timeline's clock (microseconds since the epoch), e.g. to stamp enqueue times.
  int64_t Now() const { return clock_(); }

  // Offset added to `rank`'s event times (all-ranks mode); 0 unless set. Kept across
  // Start/Stop.
  void SetClockOffset(int rank, int64_t offset_us);

  // Maps one event onto trace records. No-op unless active().
  void Record(const TimelineEvent& event);

  // Helpers that record an event of this process (local_rank, clock()).
  void NegotiateStart(std::string_view tensor, std::string_view request_type);
  void NegotiateRankReady(std::string_view tensor, int rank);
  void NegotiateEnd(std::string_view tensor);
  void Start(std::string_view tensor, std::string_view response_type);
  void ActivityStart(std::string_view tensor, std::string_view activity);
  void ActivityEnd(std::string_view tensor);
  void End(std::string_view tensor, std::string_view dtype, std::string_view shape,
           int64_t bytes = -1);
  void MarkCycleStart();
  // A QUEUE span of `tensor` (op type `op`) from `enqueued_us` (this clock) to now.
  void Queue(std::string_view tensor, std::string_view op, int64_t enqueued_us);

 private:
  // Rows are per file (Start clears them). The *_open flags say whether this file holds the
  // B of the span in progress: an E, rank tick or activity of a span whose B was not written
  // here (the timeline started or switched mid-span, or the B was dropped) is skipped, so a
  // file never holds an E without its B.
  struct Row {
    int pid = 0;
    int tid = 0;
    bool negotiate_open = false;
    bool op_open = false;
    bool activity_open = false;
  };
  // A tensor's rows (of one rank in all-ranks mode): its own and its QUEUE row, each made (its
  // metadata written) when its first span begins.
  struct TensorRows {
    Row main, queue;
    bool has_main = false, has_queue = false;
  };
  // What the helpers and Record() map onto records: a TimelineEvent's fields, borrowed.
  struct EventView {
    EventType type = EventType::kCycleStart;
    int rank = 0;
    int64_t time_us = 0;
    std::string_view tensor, name;
    int ready_rank = -1;
    std::string_view dtype, shape;
    int64_t bytes = -1;
    int64_t dur_us = 0;
  };
  // Lookups by (rank or -1, tensor) without building a key: heterogeneous hash and equality.
  struct RowKey {
    int rank;
    std::string tensor;
  };
  struct RowKeyView {
    int rank;
    std::string_view tensor;
  };
  struct RowKeyHash {
    using is_transparent = void;
    size_t operator()(const RowKeyView& k) const {
      return std::hash<std::string_view>()(k.tensor) * 31 + static_cast<size_t>(k.rank);
    }
    size_t operator()(const RowKey& k) const { return (*this)(RowKeyView{k.rank, k.tensor}); }
  };
  struct RowKeyEq {
    using is_transparent = void;
    static RowKeyView View(const RowKey& k) { return {k.rank, k.tensor}; }
    static RowKeyView View(const RowKeyView& k) { return k; }
    template <typename A, typename B>
    bool operator()(const A& a, const B& b) const {
      return View(a).rank == View(b).rank && View(a).tensor == View(b).tensor;
    }
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
  };

  EventView LocalEvent(EventType type, std::string_view tensor, std::string_view name) const;
  void RecordView(const EventView& event);  // takes mu_
  void RecordLocked(const EventView& event);
  Row* RowForLocked(const EventView& event, bool queue_row);
  // The event's existing row, or null: no B of this tensor was written to this file.
  Row* FindRowLocked(const EventView& event);
  // A name kept for the Timeline's lifetime (records refer to it: no copy per record); the
  // names are the ops', activities' and NEGOTIATE_<op>, a handful.
  std::string_view InternLocked(std::string_view name);
  std::string_view NegotiateNameLocked(std::string_view request_type);
  bool EmitLocked(char phase, std::string_view stable_name, const Row& row, int64_t ts,
                  TraceArgs args = {}, int64_t dur = 0);
  // Writes the E of a span `*open` says this file holds; true when none is open any more (false:
  // the E could not be queued, the span stays open and the caller writes no B inside it).
  bool CloseLocked(bool* open, const Row& row, int64_t ts);
  // Closes every span open on `row` (before a negotiation or an op begins); true when it did.
  bool CloseAllLocked(Row* row, int64_t ts);
  bool EmitMetadataLocked(const char* name, int pid, int tid, TraceArg value);
  void StopLocked();  // Stop() under switch_mu_
  void SetActiveLocked() {
    active_.store(writer_ != nullptr || collecting_, std::memory_order_relaxed);
  }

  const Clock clock_;
  const int local_rank_;

  // Held through Start, StartCollecting and Stop: a Stop racing a Start closed the old file
  // after the new one was set up, or let two writers open one file.
  std::mutex switch_mu_;
  mutable std::mutex mu_;
  // writer_ != nullptr || collecting_, readable without mu_: a helper of a stopped timeline
  // builds nothing (a record racing a Stop finds the writer gone under mu_ and is dropped).
  std::atomic<bool> active_{false};
  std::unique_ptr<TimelineWriter> writer_;          // null when stopped or collecting
  std::string path_;                                // writer_'s file
  std::optional<std::pair<dev_t, ino_t>> file_id_;  // writer_'s file as (device, inode)
  bool collecting_ = false;
  std::vector<TimelineEvent> collected_;
  uint64_t collect_dropped_ = 0;
  uint64_t last_dropped_ = 0;
  TimelineOptions options_;
  int64_t start_us_ = 0;
  std::map<int, int64_t> clock_offsets_;
  std::unordered_map<RowKey, TensorRows, RowKeyHash, RowKeyEq> rows_;
  std::unordered_map<std::string, int, StringHash, std::equal_to<>> tensor_ids_;  // 1-based
  std::map<int, bool> rank_rows_named_;  // all-ranks: rank -> process_name written
  std::unordered_set<std::string, StringHash, std::equal_to<>> names_;  // InternLocked
  std::unordered_map<std::string, std::string_view, StringHash, std::equal_to<>> negotiate_names_;
};

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_TIMELINE_H_
