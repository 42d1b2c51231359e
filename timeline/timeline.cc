#include "timeline/timeline.h"

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
  Stop();
  auto writer = std::make_unique<TimelineWriter>(options.queue_capacity);
  const int64_t start_us = clock_();
  TraceRecord name{'M', "process_name", 0, 0, 0, {}};
  name.args = {{"name", std::string("hvd")}, {"start_time_since_epoch_in_micros", start_us}};
  TraceRecord sort{'M', "process_sort_index", 0, 0, 0, {{"sort_index", int64_t{0}}}};
  HVD_RETURN_IF_ERROR(writer->Open(path, {name, sort}));
  std::lock_guard<std::mutex> lock(mu_);
  writer_ = std::move(writer);
  options_ = options;
  start_us_ = start_us;
  rows_.clear();
  tensor_ids_.clear();
  rank_rows_named_.clear();
  return Status::OK();
}

void Timeline::Stop() {
  std::unique_ptr<TimelineWriter> writer;
  {
    std::lock_guard<std::mutex> lock(mu_);
    writer = std::move(writer_);
  }
  if (!writer) return;
  writer->Close();  // outside mu_: producers keep going (and are ignored) while it drains
  std::lock_guard<std::mutex> lock(mu_);
  last_dropped_ = writer->dropped();
}

bool Timeline::active() const {
  std::lock_guard<std::mutex> lock(mu_);
  return writer_ != nullptr;
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
                          std::vector<std::pair<std::string, TraceArg>> args) {
  return writer_->Enqueue(
      TraceRecord{phase, std::move(name), row.pid, row.tid, ts, std::move(args)});
}

bool Timeline::EmitMetadataLocked(const char* name, int pid, int tid, TraceArg value) {
  const bool is_name = std::string_view(name).ends_with("_name");
  TraceRecord r{'M', name, pid, tid, 0, {}};
  r.args.emplace_back(is_name ? "name" : "sort_index", std::move(value));
  return writer_->Enqueue(std::move(r));
}

// Finds or creates the row of the event's tensor, writing its metadata first. Returns
// null if the metadata could not be queued (queue full): the event is then dropped too
// and the metadata is retried with the tensor's next event.
Timeline::Row* Timeline::RowForLocked(const TimelineEvent& event) {
  const int rank_key = options_.all_ranks ? event.rank : -1;
  auto key = std::make_pair(rank_key, event.tensor);
  auto it = rows_.find(key);
  if (it != rows_.end()) return &it->second;
  auto [id_it, inserted] =
      tensor_ids_.emplace(event.tensor, static_cast<int>(tensor_ids_.size()) + 1);
  const int id = id_it->second;
  Row row;
  if (!options_.all_ranks) {
    row.pid = id;
    if (!EmitMetadataLocked("process_name", id, 0, event.tensor) ||
        !EmitMetadataLocked("process_sort_index", id, 0, int64_t{id})) {
      return nullptr;
    }
  } else {
    row.pid = event.rank + 1;
    row.tid = id;
    if (!rank_rows_named_[event.rank]) {
      if (!EmitMetadataLocked("process_name", row.pid, 0, "rank " + std::to_string(event.rank)) ||
          !EmitMetadataLocked("process_sort_index", row.pid, 0, int64_t{row.pid})) {
        return nullptr;
      }
      rank_rows_named_[event.rank] = true;
    }
    if (!EmitMetadataLocked("thread_name", row.pid, row.tid, event.tensor) ||
        !EmitMetadataLocked("thread_sort_index", row.pid, row.tid, int64_t{id})) {
      return nullptr;
    }
  }
  return &rows_.emplace(key, row).first->second;
}

void Timeline::Record(const TimelineEvent& event) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!writer_) return;
  auto offset = clock_offsets_.find(event.rank);
  const int64_t ts =
      event.time_us + (offset == clock_offsets_.end() ? 0 : offset->second) - start_us_;
  if (event.type == EventType::kCycleStart) {
    if (options_.mark_cycles) EmitLocked('i', "CYCLE_START", Row{}, ts);
    return;
  }
  Row* row = RowForLocked(event);
  if (row == nullptr) return;
  switch (event.type) {
    case EventType::kNegotiateStart:
      EmitLocked('B', "NEGOTIATE_" + event.name, *row, ts);
      break;
    case EventType::kNegotiateRankReady:
      EmitLocked('X', std::to_string(event.ready_rank), *row, ts);
      break;
    case EventType::kNegotiateEnd:
      EmitLocked('E', "", *row, ts);
      break;
    case EventType::kStart:
      EmitLocked('B', event.name, *row, ts);
      break;
    case EventType::kActivityStart:
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

}  // namespace hvd::timeline
