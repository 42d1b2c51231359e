#include "runtime/core/runtime_timeline.h"

#include <array>
#include <cctype>
#include <cstdio>
#include <limits>
#include <string_view>

#include "common/logging.h"
#include "timeline/clock_reply.h"

namespace hvd::runtime {

RuntimeTimeline::RuntimeTimeline(int rank, bool all_ranks, int64_t clock_skew_us)
    : rank_(rank),
      all_ranks_(all_ranks),
      timeline_(
          clock_skew_us == 0
              ? timeline::Timeline::Clock(timeline::Timeline::SystemClockMicros)
              : [clock_skew_us] { return timeline::Timeline::SystemClockMicros() + clock_skew_us; },
          rank) {}

RuntimeTimeline::~RuntimeTimeline() {
  std::lock_guard<std::mutex> lock(mu_);
  on_.store(false, std::memory_order_relaxed);
  timeline_.Stop();
}

void RuntimeTimeline::AwaitShipmentLocked() {
  if (rank_ != 0 || !all_ranks_ || !timeline_.active()) return;
  const uint64_t due = iterations_.load(std::memory_order_relaxed) + 2;
  std::unique_lock<std::mutex> lock(ship_mu_);
  const bool shipped = ship_cv_.wait_for(
      lock, kShipmentWait, [&] { return shipments_ended_ || shipped_iteration_ >= due; });
  if (!shipped) {
    HVD_LOG_WARNING(
        "timeline: no event shipment from the other ranks within {} s; the file closes without "
        "their events since the last one",
        kShipmentWait.count());
  }
}

Status RuntimeTimeline::Start(const std::string& path, bool mark_cycles) {
  std::lock_guard<std::mutex> lock(mu_);
  AwaitShipmentLocked();  // a running file gets the other ranks' events before the switch
  on_.store(false, std::memory_order_relaxed);
  timeline::TimelineOptions options;
  options.mark_cycles = mark_cycles;
  options.all_ranks = all_ranks_;
  if (rank_ == 0) {
    Status s = timeline_.Start(path, options);
    if (!s.ok()) {
      on_.store(timeline_.active(), std::memory_order_relaxed);  // the running file goes on
      return s;
    }
  } else {
    timeline_.StartCollecting(options);
  }
  mark_cycles_.store(mark_cycles, std::memory_order_relaxed);
  on_.store(true, std::memory_order_relaxed);
  return Status::OK();
}

void RuntimeTimeline::Stop() {
  std::lock_guard<std::mutex> lock(mu_);
  draining_.store(true, std::memory_order_relaxed);
  on_.store(false, std::memory_order_release);  // ReceiveShipment sees draining_ with it
  AwaitShipmentLocked();
  draining_.store(false, std::memory_order_relaxed);
  timeline_.Stop();
}

void RuntimeTimeline::MarkCycleStart() {
  iterations_.fetch_add(1, std::memory_order_relaxed);
  if (rank_ == 0 && on() && mark_cycles_.load(std::memory_order_relaxed)) {
    timeline_.MarkCycleStart();
  }
}

void RuntimeTimeline::ShipmentRoundDone() {
  {
    std::lock_guard<std::mutex> lock(ship_mu_);
    shipped_iteration_ = iterations_.load(std::memory_order_relaxed);
  }
  ship_cv_.notify_all();
}

void RuntimeTimeline::EndShipments() {
  {
    std::lock_guard<std::mutex> lock(ship_mu_);
    shipments_ended_ = true;
  }
  ship_cv_.notify_all();
}

// A shipment: timeline::EncodeShipment.
std::string RuntimeTimeline::TakeShipment() {
  if (rank_ == 0) return {};
  std::vector<timeline::TimelineEvent> events;
  const uint64_t dropped = timeline_.TakeCollected(&events);
  if (events.empty() && dropped == 0) return {};
  return timeline::EncodeShipment(dropped, events);
}

void RuntimeTimeline::ReceiveShipment(int rank, std::string_view shipment) {
  if (rank_ != 0 || shipment.empty()) return;
  // Off: the events were recorded while rank 0 was not recording (before its start, after its
  // stop), except while a Stop waits for exactly these.
  if (!on_.load(std::memory_order_acquire) && !draining_.load(std::memory_order_relaxed)) return;
  uint64_t dropped = 0;
  auto events = timeline::DecodeShipment(shipment, &dropped);
  if (!events.ok()) {
    HVD_LOG_WARNING("timeline: ignored events from rank {}: {}", rank, events.status().message());
    return;
  }
  for (timeline::TimelineEvent& e : *events) {
    e.rank = rank;  // trust the position, not the payload
    timeline_.Record(e);
  }
  timeline_.AddDropped(dropped);
}

void RuntimeTimeline::SetClockOffset(int rank, int64_t offset_us) {
  timeline_.SetClockOffset(rank, offset_us);
}

Status EstimateClockOffsets(Communicator* comm, const timeline::Timeline& clock, int rounds,
                            std::vector<int64_t>* offsets_us, std::vector<int64_t>* rtts_us) {
  const int n = comm->size();
  const bool root = comm->rank() == 0;
  offsets_us->assign(root ? n : 0, 0);
  rtts_us->assign(root ? n : 0, root ? std::numeric_limits<int64_t>::max() : 0);
  if (root && n > 0) (*rtts_us)[0] = 0;
  for (int round = 0; round < rounds; ++round) {
    std::string ping = root ? std::to_string(clock.Now()) : std::string();
    HVD_RETURN_IF_ERROR(comm->BroadcastBytes(&ping, 0));
    const int64_t t2 = clock.Now();
    std::string pong;
    if (!root) pong = timeline::EncodeClockReply(t2, clock.Now());
    std::vector<std::string> pongs;
    HVD_RETURN_IF_ERROR(comm->GatherBytes(pong, 0, &pongs));
    if (!root) continue;
    const int64_t t4 = clock.Now();
    int64_t t1 = 0;
    if (!timeline::ParseClockReading(ping, &t1) || t4 < t1 || t4 >= timeline::kMaxClockUs) {
      return Status::Internal("timeline clock sync: rank 0's clock reads " + ping + ", then " +
                              std::to_string(t4));
    }
    for (int r = 1; r < n && r < static_cast<int>(pongs.size()); ++r) {
      int64_t r2 = 0, r3 = 0;
      if (!timeline::ParseClockReply(pongs[r], &r2, &r3)) {
        return Status::Internal("timeline clock sync: malformed reply from rank " +
                                std::to_string(r) + ": '" + pongs[r].substr(0, 64) + "'");
      }
      const int64_t rtt = (t4 - t1) - (r3 - r2);
      if (rtt < (*rtts_us)[r]) {
        (*rtts_us)[r] = rtt;
        (*offsets_us)[r] = -(((r2 - t1) + (r3 - t4)) / 2);
      }
    }
  }
  return Status::OK();
}

std::string_view TimelineOpName(OpType type) {
  // Upper-cased once per op type; the timeline records these names for every tensor.
  static const auto* const names = [] {
    auto* table = new std::array<std::string, kMaxOpType + 1>();
    for (size_t i = 0; i < table->size(); ++i) {
      std::string name = OpTypeName(static_cast<OpType>(i));
      for (char& c : name) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      (*table)[i] = std::move(name);
    }
    return table;
  }();
  const auto i = static_cast<size_t>(type);
  return i < names->size() ? std::string_view((*names)[i]) : std::string_view("UNKNOWN");
}

std::string ShapeText(std::span<const int64_t> shape) {
  std::string out = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(shape[i]);
  }
  return out + "]";
}

}  // namespace hvd::runtime
