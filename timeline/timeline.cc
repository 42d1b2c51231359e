#include "timeline/timeline.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <optional>

namespace hvd::timeline {

int64_t Timeline::SystemClockMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Timeline::Timeline(Clock clock, int local_rank)
    : clock_(std::move(clock)), local_rank_(local_rank) {}

Timeline::~Timeline() { Stop(); }

namespace {

// The file at `path` as (device, inode); nullopt when there is none.
std::optional<std::pair<dev_t, ino_t>> FileIdentity(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return std::nullopt;
  return std::make_pair(st.st_dev, st.st_ino);
}

}  // namespace

Status Timeline::Start(const std::string& path, const TimelineOptions& options) {
  std::lock_guard<std::mutex> switching(switch_mu_);
  // A running file is closed only once the new one is open: a path that cannot be opened
  // leaves the current recording going (a failed switch used to end it). The same file is
  // closed first: two writers on it would interleave. "The same" is the same file, not the same
  // string: "t.json" and its absolute path, "./t.json" or a symbolic link to it (until
  // 2026-12-01 the new writer truncated the file under the old one, which then wrote its last
  // records at their old offsets: a file of NUL bytes that no tool could read).
  bool same_file;
  {
    std::lock_guard<std::mutex> lock(mu_);
    std::optional<std::pair<dev_t, ino_t>> id = FileIdentity(path);
    same_file = writer_ != nullptr && (path_ == path || (id && file_id_ && *id == *file_id_));
  }
  if (same_file) StopLocked();
  auto writer = std::make_unique<TimelineWriter>(options.queue_capacity);
  const int64_t start_us = clock_();
  TraceRecord name{'M', "process_name", 0, 0, 0, {}};
  name.args = {{"name", std::string("hvd")}, {"start_time_since_epoch_in_micros", start_us}};
  TraceRecord sort{'M', "process_sort_index", 0, 0, 0, {{"sort_index", int64_t{0}}}};
  HVD_RETURN_IF_ERROR(writer->Open(path, {name, sort}));
  StopLocked();
  std::lock_guard<std::mutex> lock(mu_);
  writer_ = std::move(writer);
  path_ = path;
  file_id_ = FileIdentity(path);
  options_ = options;
  start_us_ = start_us;
  rows_.clear();
  tensor_ids_.clear();
  rank_rows_named_.clear();
  SetActiveLocked();
  return Status::OK();
}

void Timeline::StartCollecting(const TimelineOptions& options) {
  std::lock_guard<std::mutex> switching(switch_mu_);
  StopLocked();
  std::lock_guard<std::mutex> lock(mu_);
  collecting_ = true;
  options_ = options;
  SetActiveLocked();
}

uint64_t Timeline::TakeCollected(std::vector<TimelineEvent>* out) {
  std::lock_guard<std::mutex> lock(mu_);
  out->clear();
  out->swap(collected_);
  const uint64_t dropped = collect_dropped_;
  collect_dropped_ = 0;
  return dropped;
}

void Timeline::AddDropped(uint64_t n) {
  std::lock_guard<std::mutex> lock(mu_);
  if (writer_ && n > 0) writer_->CountDropped(n);
}

void Timeline::Stop() {
  std::lock_guard<std::mutex> switching(switch_mu_);
  StopLocked();
}

void Timeline::StopLocked() {
  std::unique_ptr<TimelineWriter> writer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    collecting_ = false;  // what was collected stays for TakeCollected
    writer = std::move(writer_);
    file_id_.reset();
    SetActiveLocked();
  }
  if (!writer) return;
  writer->Close();  // outside mu_: producers keep going (and are ignored) while it drains
  std::lock_guard<std::mutex> lock(mu_);
  last_dropped_ = writer->dropped();
}

bool Timeline::active() const { return active_.load(std::memory_order_relaxed); }

uint64_t Timeline::dropped_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_ ? writer_->dropped() : last_dropped_;
}

void Timeline::SetClockOffset(int rank, int64_t offset_us) {
  std::lock_guard<std::mutex> lock(mu_);
  clock_offsets_[rank] = offset_us;
}

bool Timeline::EmitLocked(char phase, std::string_view stable_name, const Row& row, int64_t ts,
                          TraceArgs args, int64_t dur) {
  TraceRecord r{phase, {}, row.pid, row.tid, ts, std::move(args), dur};
  r.stable_name = stable_name;
  return writer_->Enqueue(std::move(r));
}

bool Timeline::CloseLocked(bool* open, const Row& row, int64_t ts) {
  if (*open) *open = !EmitLocked('E', "", row, ts);
  return !*open;
}

bool Timeline::CloseAllLocked(Row* row, int64_t ts) {
  // Innermost first (an E closes the row's latest open B): at most one of the negotiation and
  // the op is open, an activity only inside the op.
  return CloseLocked(&row->activity_open, *row, ts) && CloseLocked(&row->op_open, *row, ts) &&
         CloseLocked(&row->negotiate_open, *row, ts);
}

bool Timeline::EmitMetadataLocked(const char* name, int pid, int tid, TraceArg value) {
  const bool is_name = std::string_view(name).ends_with("_name");
  TraceRecord r{'M', {}, pid, tid, 0, {}};
  r.stable_name = name;
  r.args.emplace_back(is_name ? "name" : "sort_index", std::move(value));
  return writer_->Enqueue(std::move(r));
}

std::string_view Timeline::InternLocked(std::string_view name) {
  auto it = names_.find(name);
  if (it == names_.end()) it = names_.emplace(name).first;
  return *it;
}

std::string_view Timeline::NegotiateNameLocked(std::string_view request_type) {
  auto it = negotiate_names_.find(request_type);
  if (it == negotiate_names_.end()) {
    const std::string_view full = InternLocked("NEGOTIATE_" + std::string(request_type));
    it = negotiate_names_.emplace(std::string(request_type), full).first;
  }
  return it->second;
}

// Finds or creates the row of the event's tensor (or of its QUEUE spans), writing its
// metadata first. Returns null if the metadata could not be queued (queue full): the event
// is then dropped too and the metadata is retried with the tensor's next event.
Timeline::Row* Timeline::RowForLocked(const EventView& event, bool queue_row) {
  const int rank_key = options_.all_ranks ? event.rank : -1;
  auto it = rows_.find(RowKeyView{rank_key, event.tensor});
  if (it != rows_.end() && (queue_row ? it->second.has_queue : it->second.has_main)) {
    return queue_row ? &it->second.queue : &it->second.main;
  }
  if (it == rows_.end()) {
    it = rows_.emplace(RowKey{rank_key, std::string(event.tensor)}, TensorRows{}).first;
  }
  TensorRows& rows = it->second;
  auto id_it = tensor_ids_.find(event.tensor);
  if (id_it == tensor_ids_.end()) {
    id_it = tensor_ids_.emplace(std::string(event.tensor), static_cast<int>(tensor_ids_.size()) + 1)
                .first;
  }
  const int id = id_it->second;
  // The tensor's process row must exist before its QUEUE thread row is named.
  if (queue_row && !rows.has_main && RowForLocked(event, false) == nullptr) return nullptr;
  Row row;
  if (!options_.all_ranks) {
    row.pid = id;
    row.tid = queue_row ? 1 : 0;
    const bool ok = queue_row
                        ? EmitMetadataLocked("thread_name", id, 1, std::string("QUEUE")) &&
                              EmitMetadataLocked("thread_sort_index", id, 1, int64_t{1})
                        : EmitMetadataLocked("process_name", id, 0, std::string(event.tensor)) &&
                              EmitMetadataLocked("process_sort_index", id, 0, int64_t{id});
    if (!ok) return nullptr;
  } else {
    row.pid = event.rank + 1;
    row.tid = 2 * id + (queue_row ? 1 : 0);
    if (!rank_rows_named_[event.rank]) {
      if (!EmitMetadataLocked("process_name", row.pid, 0, "rank " + std::to_string(event.rank)) ||
          !EmitMetadataLocked("process_sort_index", row.pid, 0, int64_t{row.pid})) {
        return nullptr;
      }
      rank_rows_named_[event.rank] = true;
    }
    std::string name(event.tensor);
    if (queue_row) name += " QUEUE";
    if (!EmitMetadataLocked("thread_name", row.pid, row.tid, std::move(name)) ||
        !EmitMetadataLocked("thread_sort_index", row.pid, row.tid, int64_t{row.tid})) {
      return nullptr;
    }
  }
  // RowForLocked(event, false) above may have rehashed rows_: `rows` stays valid (unordered_map
  // keeps its elements in place).
  if (queue_row) {
    rows.queue = row;
    rows.has_queue = true;
    return &rows.queue;
  }
  rows.main = row;
  rows.has_main = true;
  return &rows.main;
}

Timeline::Row* Timeline::FindRowLocked(const EventView& event) {
  const int rank_key = options_.all_ranks ? event.rank : -1;
  auto it = rows_.find(RowKeyView{rank_key, event.tensor});
  return it == rows_.end() || !it->second.has_main ? nullptr : &it->second.main;
}

void Timeline::Record(const TimelineEvent& event) {
  EventView v;
  v.type = event.type;
  v.rank = event.rank;
  v.time_us = event.time_us;
  v.tensor = event.tensor;
  v.name = event.name;
  v.ready_rank = event.ready_rank;
  v.dtype = event.dtype;
  v.shape = event.shape;
  v.bytes = event.bytes;
  v.dur_us = event.dur_us;
  RecordView(v);
}

void Timeline::RecordView(const EventView& event) {
  std::lock_guard<std::mutex> lock(mu_);
  RecordLocked(event);
}

void Timeline::RecordLocked(const EventView& event) {
  if (collecting_) {
    if (event.type == EventType::kCycleStart) return;  // rank 0 marks the job's cycles
    if (collected_.size() >= options_.queue_capacity) {
      ++collect_dropped_;
      return;
    }
    TimelineEvent& e = collected_.emplace_back();
    e.type = event.type;
    e.rank = event.rank;
    e.time_us = event.time_us;
    e.tensor = std::string(event.tensor);
    e.name = std::string(event.name);
    e.ready_rank = event.ready_rank;
    e.dtype = std::string(event.dtype);
    e.shape = std::string(event.shape);
    e.bytes = event.bytes;
    e.dur_us = event.dur_us;
    return;
  }
  if (!writer_) return;
  if (writer_->failed()) {
    // The file cannot be written (a full disk): the job goes on without a timeline, and the
    // helpers stop building events (Stop or a new Start turns recording back on).
    active_.store(false, std::memory_order_relaxed);
    return;
  }
  auto offset = clock_offsets_.find(event.rank);
  int64_t ts = 0;
  // Another rank's time and offset came over the data connections: one that cannot be placed
  // on this file's clock is not an event of this job, and is left out (the E of a span whose B
  // was left out is skipped below, as after a drop).
  if (__builtin_add_overflow(event.time_us, offset == clock_offsets_.end() ? 0 : offset->second,
                             &ts) ||
      __builtin_sub_overflow(ts, start_us_, &ts)) {
    return;
  }
  if (event.type == EventType::kCycleStart) {
    if (options_.mark_cycles) EmitLocked('i', "CYCLE_START", Row{}, ts);
    return;
  }
  // Only a span's B may create its row; the other events belong to a span already open here.
  const bool opens = event.type == EventType::kQueue || event.type == EventType::kNegotiateStart ||
                     event.type == EventType::kStart;
  Row* row = opens ? RowForLocked(event, event.type == EventType::kQueue) : FindRowLocked(event);
  if (row == nullptr) return;
  switch (event.type) {
    case EventType::kQueue: {
      TraceArgs args;
      args.emplace_back("op", std::string(event.name));
      EmitLocked('X', "QUEUE", *row, ts, std::move(args), std::max<int64_t>(0, event.dur_us));
      break;
    }
    case EventType::kNegotiateStart:
      // A span whose E could not be queued (the queue was full) is closed now, before the next
      // one opens: left open, every later span of the row nested inside it (until 2026-12-01).
      if (!CloseAllLocked(row, ts)) break;
      row->negotiate_open = EmitLocked('B', NegotiateNameLocked(event.name), *row, ts);
      break;
    case EventType::kNegotiateRankReady:
      if (row->negotiate_open) {
        // A rank's number: not a name to keep; its record carries it.
        TraceRecord r{'X', std::to_string(event.ready_rank), row->pid, row->tid, ts, {}};
        writer_->Enqueue(std::move(r));
      }
      break;
    case EventType::kNegotiateEnd:
      CloseLocked(&row->negotiate_open, *row, ts);
      break;
    case EventType::kStart:
      if (!CloseAllLocked(row, ts)) break;
      row->op_open = EmitLocked('B', InternLocked(event.name), *row, ts);
      break;
    case EventType::kActivityStart:
      if (!row->op_open || !CloseLocked(&row->activity_open, *row, ts)) break;
      row->activity_open = EmitLocked('B', InternLocked(event.name), *row, ts);
      break;
    case EventType::kActivityEnd:
      CloseLocked(&row->activity_open, *row, ts);
      break;
    case EventType::kEnd: {
      if (!CloseLocked(&row->activity_open, *row, ts) || !row->op_open) break;
      TraceArgs args;
      args.emplace_back("dtype", std::string(event.dtype));
      args.emplace_back("shape", std::string(event.shape));
      if (event.bytes >= 0) args.emplace_back("bytes", event.bytes);
      row->op_open = !EmitLocked('E', "", *row, ts, std::move(args));
      break;
    }
    case EventType::kCycleStart:
      break;
  }
}

Timeline::EventView Timeline::LocalEvent(EventType type, std::string_view tensor,
                                         std::string_view name) const {
  EventView e;
  e.type = type;
  e.rank = local_rank_;
  e.time_us = clock_();
  e.tensor = tensor;
  e.name = name;
  return e;
}

void Timeline::NegotiateStart(std::string_view tensor, std::string_view request_type) {
  if (active()) RecordView(LocalEvent(EventType::kNegotiateStart, tensor, request_type));
}

void Timeline::NegotiateRankReady(std::string_view tensor, int rank) {
  if (!active()) return;
  EventView e = LocalEvent(EventType::kNegotiateRankReady, tensor, "");
  e.ready_rank = rank;
  RecordView(e);
}

void Timeline::NegotiateEnd(std::string_view tensor) {
  if (active()) RecordView(LocalEvent(EventType::kNegotiateEnd, tensor, ""));
}

void Timeline::Start(std::string_view tensor, std::string_view response_type) {
  if (active()) RecordView(LocalEvent(EventType::kStart, tensor, response_type));
}

void Timeline::ActivityStart(std::string_view tensor, std::string_view activity) {
  if (active()) RecordView(LocalEvent(EventType::kActivityStart, tensor, activity));
}

void Timeline::ActivityEnd(std::string_view tensor) {
  if (active()) RecordView(LocalEvent(EventType::kActivityEnd, tensor, ""));
}

void Timeline::End(std::string_view tensor, std::string_view dtype, std::string_view shape,
                   int64_t bytes) {
  if (!active()) return;
  EventView e = LocalEvent(EventType::kEnd, tensor, "");
  e.dtype = dtype;
  e.shape = shape;
  e.bytes = bytes;
  RecordView(e);
}

void Timeline::MarkCycleStart() {
  if (active()) RecordView(LocalEvent(EventType::kCycleStart, "", ""));
}

void Timeline::Queue(std::string_view tensor, std::string_view op, int64_t enqueued_us) {
  if (!active()) return;
  EventView e = LocalEvent(EventType::kQueue, tensor, op);
  e.dur_us = e.time_us - enqueued_us;
  e.time_us = enqueued_us;
  RecordView(e);
}

}  // namespace hvd::timeline
