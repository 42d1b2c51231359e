#include "timeline/timeline.h"

#include <algorithm>
#include <chrono>

namespace hvd::timeline {

int64_t Timeline::SystemClockMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

Timeline::Timeline(Clock clock, int local_rank)
    : clock_(std::move(clock)), local_rank_(local_rank) {}

Timeline::~Timeline() { Stop(); }

Status Timeline::Start(const std::string& path, const TimelineOptions& options) {
  // A running file is closed only once the new one is open: a path that cannot be opened
  // leaves the current recording going (a failed switch used to end it). The same file is
  // closed first: two writers on it would interleave.
  bool same_file;
  {
    std::lock_guard<std::mutex> lock(mu_);
    same_file = writer_ != nullptr && path_ == path;
  }
  if (same_file) Stop();
  auto writer = std::make_unique<TimelineWriter>(options.queue_capacity);
  const int64_t start_us = clock_();
  TraceRecord name{'M', "process_name", 0, 0, 0, {}};
  name.args = {{"name", std::string("hvd")}, {"start_time_since_epoch_in_micros", start_us}};
  TraceRecord sort{'M', "process_sort_index", 0, 0, 0, {{"sort_index", int64_t{0}}}};
  HVD_RETURN_IF_ERROR(writer->Open(path, {name, sort}));
  Stop();
  std::lock_guard<std::mutex> lock(mu_);
  writer_ = std::move(writer);
  path_ = path;
  options_ = options;
  start_us_ = start_us;
  rows_.clear();
  tensor_ids_.clear();
  rank_rows_named_.clear();
  return Status::OK();
}

void Timeline::StartCollecting(const TimelineOptions& options) {
  Stop();
  std::lock_guard<std::mutex> lock(mu_);
  collecting_ = true;
  options_ = options;
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
  std::unique_ptr<TimelineWriter> writer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    collecting_ = false;  // what was collected stays for TakeCollected
    writer = std::move(writer_);
  }
  if (!writer) return;
  writer->Close();  // outside mu_: producers keep going (and are ignored) while it drains
  std::lock_guard<std::mutex> lock(mu_);
  last_dropped_ = writer->dropped();
}

bool Timeline::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_ != nullptr || collecting_;
}

uint64_t Timeline::dropped_events() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_ ? writer_->dropped() : last_dropped_;
}

void Timeline::SetClockOffset(int rank, int64_t offset_us) {
  std::lock_guard<std::mutex> lock(mu_);
  clock_offsets_[rank] = offset_us;
}

bool Timeline::EmitLocked(char phase, std::string name, const Row& row, int64_t ts,
                          std::vector<std::pair<std::string, TraceArg>> args, int64_t dur) {
  return writer_->Enqueue(
      TraceRecord{phase, std::move(name), row.pid, row.tid, ts, std::move(args), dur});
}

bool Timeline::EmitMetadataLocked(const char* name, int pid, int tid, TraceArg value) {
  const bool is_name = std::string_view(name).ends_with("_name");
  TraceRecord r{'M', name, pid, tid, 0, {}};
  r.args.emplace_back(is_name ? "name" : "sort_index", std::move(value));
  return writer_->Enqueue(std::move(r));
}

// Finds or creates the row of the event's tensor (or of its QUEUE spans), writing its
// metadata first. Returns null if the metadata could not be queued (queue full): the event
// is then dropped too and the metadata is retried with the tensor's next event.
Timeline::Row* Timeline::RowForLocked(const TimelineEvent& event, bool queue_row) {
  const int rank_key = options_.all_ranks ? event.rank : -1;
  auto it = rows_.find(std::tuple<int, std::string_view, bool>(rank_key, event.tensor, queue_row));
  if (it != rows_.end()) return &it->second;
  auto key = std::make_tuple(rank_key, event.tensor, queue_row);
  auto [id_it, inserted] =
      tensor_ids_.emplace(event.tensor, static_cast<int>(tensor_ids_.size()) + 1);
  const int id = id_it->second;
  // The tensor's process row must exist before its QUEUE thread row is named.
  if (queue_row && rows_.find(std::make_tuple(rank_key, event.tensor, false)) == rows_.end() &&
      RowForLocked(event, false) == nullptr) {
    return nullptr;
  }
  Row row;
  if (!options_.all_ranks) {
    row.pid = id;
    row.tid = queue_row ? 1 : 0;
    const bool ok = queue_row ? EmitMetadataLocked("thread_name", id, 1, std::string("QUEUE")) &&
                                    EmitMetadataLocked("thread_sort_index", id, 1, int64_t{1})
                              : EmitMetadataLocked("process_name", id, 0, event.tensor) &&
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
    const std::string name = queue_row ? event.tensor + " QUEUE" : event.tensor;
    if (!EmitMetadataLocked("thread_name", row.pid, row.tid, name) ||
        !EmitMetadataLocked("thread_sort_index", row.pid, row.tid, int64_t{row.tid})) {
      return nullptr;
    }
  }
  return &rows_.emplace(key, row).first->second;
}

Timeline::Row* Timeline::FindRowLocked(const TimelineEvent& event) {
  const int rank_key = options_.all_ranks ? event.rank : -1;
  auto it = rows_.find(std::tuple<int, std::string_view, bool>(rank_key, event.tensor, false));
  return it == rows_.end() ? nullptr : &it->second;
}

void Timeline::Record(const TimelineEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (collecting_) {
    if (event.type == EventType::kCycleStart) return;  // rank 0 marks the job's cycles
    if (collected_.size() >= options_.queue_capacity) {
      ++collect_dropped_;
    } else {
      collected_.push_back(event);
    }
    return;
  }
  if (!writer_) return;
  auto offset = clock_offsets_.find(event.rank);
  const int64_t ts =
      event.time_us + (offset == clock_offsets_.end() ? 0 : offset->second) - start_us_;
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
    case EventType::kQueue:
      EmitLocked('X', "QUEUE", *row, ts, {{"op", event.name}}, std::max<int64_t>(0, event.dur_us));
      break;
    case EventType::kNegotiateStart:
      row->negotiate_open = EmitLocked('B', "NEGOTIATE_" + event.name, *row, ts);
      break;
    case EventType::kNegotiateRankReady:
      if (row->negotiate_open) EmitLocked('X', std::to_string(event.ready_rank), *row, ts);
      break;
    case EventType::kNegotiateEnd:
      if (row->negotiate_open) EmitLocked('E', "", *row, ts);
      row->negotiate_open = false;
      break;
    case EventType::kStart:
      row->op_open = EmitLocked('B', event.name, *row, ts);
      break;
    case EventType::kActivityStart:
      if (!row->op_open) break;
      if (row->activity_open) EmitLocked('E', "", *row, ts);
      row->activity_open = EmitLocked('B', event.name, *row, ts);
      break;
    case EventType::kActivityEnd:
      if (row->activity_open) EmitLocked('E', "", *row, ts);
      row->activity_open = false;
      break;
    case EventType::kEnd: {
      if (row->activity_open) EmitLocked('E', "", *row, ts);
      row->activity_open = false;
      if (!row->op_open) break;
      row->op_open = false;
      std::vector<std::pair<std::string, TraceArg>> args = {{"dtype", event.dtype},
                                                            {"shape", event.shape}};
      if (event.bytes >= 0) args.emplace_back("bytes", event.bytes);
      EmitLocked('E', "", *row, ts, std::move(args));
      break;
    }
    case EventType::kCycleStart:
      break;
  }
}

TimelineEvent Timeline::LocalEvent(EventType type, std::string_view tensor,
                                   std::string_view name) const {
  TimelineEvent e;
  e.type = type;
  e.rank = local_rank_;
  e.time_us = clock_();
  e.tensor = std::string(tensor);
  e.name = std::string(name);
  return e;
}

void Timeline::NegotiateStart(std::string_view tensor, std::string_view request_type) {
  if (active()) Record(LocalEvent(EventType::kNegotiateStart, tensor, request_type));
}

void Timeline::NegotiateRankReady(std::string_view tensor, int rank) {
  if (!active()) return;
  TimelineEvent e = LocalEvent(EventType::kNegotiateRankReady, tensor, "");
  e.ready_rank = rank;
  Record(e);
}

void Timeline::NegotiateEnd(std::string_view tensor) {
  if (active()) Record(LocalEvent(EventType::kNegotiateEnd, tensor, ""));
}

void Timeline::Start(std::string_view tensor, std::string_view response_type) {
  if (active()) Record(LocalEvent(EventType::kStart, tensor, response_type));
}

void Timeline::ActivityStart(std::string_view tensor, std::string_view activity) {
  if (active()) Record(LocalEvent(EventType::kActivityStart, tensor, activity));
}

void Timeline::ActivityEnd(std::string_view tensor) {
  if (active()) Record(LocalEvent(EventType::kActivityEnd, tensor, ""));
}

void Timeline::End(std::string_view tensor, std::string_view dtype, std::string_view shape,
                   int64_t bytes) {
  if (!active()) return;
  TimelineEvent e = LocalEvent(EventType::kEnd, tensor, "");
  e.dtype = std::string(dtype);
  e.shape = std::string(shape);
  e.bytes = bytes;
  Record(e);
}

void Timeline::MarkCycleStart() {
  if (active()) Record(LocalEvent(EventType::kCycleStart, "", ""));
}

void Timeline::Queue(std::string_view tensor, std::string_view op, int64_t enqueued_us) {
  if (!active()) return;
  TimelineEvent e = LocalEvent(EventType::kQueue, tensor, op);
  e.dur_us = e.time_us - enqueued_us;
  e.time_us = enqueued_us;
  Record(e);
}

}  // namespace hvd::timeline
