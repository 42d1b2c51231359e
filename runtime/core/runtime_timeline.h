#ifndef HVD_RUNTIME_CORE_RUNTIME_TIMELINE_H_
#define HVD_RUNTIME_CORE_RUNTIME_TIMELINE_H_

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/core/negotiation/message.h"
#include "runtime/transports/communicator.h"
#include "timeline/timeline.h"

namespace hvd::runtime {

// RuntimeTimeline is the runtime's switch in front of hvd::timeline::Timeline. By default only
// global rank 0 owns one (Horovod: the coordinator writes the whole job's timeline). With
// HVD_TIMELINE_ALL_RANKS every rank owns one: rank 0 writes the file, the other ranks collect
// their own events (Timeline::StartCollecting) and ship them to rank 0 in the background
// loop (TakeShipment / ReceiveShipment, a GatherBytes on the global communicator every few
// iterations and at shutdown); rank 0 shifts them onto its clock with the offsets measured by
// EstimateClockOffsets at start-up. Rank 0's file is the only file and stays valid JSON at
// every moment, so a killed job leaves everything shipped so far.
//
// Closing a file of an all-ranks timeline on rank 0 (Stop, or Start while running) first waits
// for the shipment round of the second iteration after the call: rank 1 ends iteration k + 1
// only after receiving rank 0's part of it, sent after the call, so what rank 1 ships in an
// iteration >= k + 2 holds every event it recorded before the call. Shipments come every
// kTimelineShipInterval iterations (runtime.cc), so the wait is at most that many iterations
// (idle ones are <= 16 ms apart), bounded by kShipmentWait; nothing changes between stops.
// Ranks other than 0 keep what they collected across Stop/Start: it ships with the next round.
//
// Recording code tests on() -- one relaxed atomic load -- before building any event, so a
// disabled timeline costs one branch per response. The Timeline itself never blocks the
// caller (bounded queue or bounded collection, drops are counted), so the background thread
// may record freely.
//
// Threading: on()/timeline()/mark_cycles() from any thread; Start/Stop are serialized by an
// internal mutex (user threads via hvd_start_timeline, the runtime at init/shutdown). A
// racing record after Stop is a no-op inside Timeline. Shipments: background thread.
class RuntimeTimeline {
 public:
  // `clock_skew_us` shifts this rank's clock (tests of the clock alignment only).
  RuntimeTimeline(int rank, bool all_ranks, int64_t clock_skew_us = 0);
  ~RuntimeTimeline();  // closes the file without waiting for a shipment

  bool on() const { return on_.load(std::memory_order_relaxed); }
  bool all_ranks() const { return all_ranks_; }
  int rank() const { return rank_; }
  timeline::Timeline& timeline() { return timeline_; }

  // Rank 0: switches to `path` (restart after Stop, or while running, both work). Other
  // ranks (all-ranks mode): starts collecting; `path` is ignored. Rank 0 of an all-ranks
  // timeline waits for the other ranks' events before a switch (above).
  Status Start(const std::string& path, bool mark_cycles);
  // Rank 0 of an all-ranks timeline stops recording its own events at once and closes the
  // file after the shipment round above. Other ranks stop collecting.
  void Stop();
  // At the start of every background iteration: counts iterations, marks the cycle.
  void MarkCycleStart();

  // Ranks other than 0: the events collected since the last call, encoded; "" when the
  // timeline is off. Rank 0: "".
  std::string TakeShipment();
  // Rank 0: writes the events of `rank`'s shipment (ignored while the timeline is off).
  void ReceiveShipment(int rank, std::string_view shipment);
  // Rank 0: after each shipment round, once every rank's shipment was received.
  void ShipmentRoundDone();
  // The background loop has stopped: no shipment round comes any more; nothing waits for one.
  void EndShipments();
  // Rank 0: offset added to `rank`'s event times (rank 0's clock minus that rank's).
  void SetClockOffset(int rank, int64_t offset_us);

  static constexpr std::chrono::seconds kShipmentWait{10};

 private:
  // Rank 0 of an all-ranks timeline: waits (mu_ held) for the shipment round described above.
  void AwaitShipmentLocked();

  const int rank_;
  const bool all_ranks_;
  std::mutex mu_;
  std::atomic<bool> on_{false};
  std::atomic<bool> draining_{false};  // Stop waits for shipments: they are still written
  std::atomic<bool> mark_cycles_{false};
  std::atomic<uint64_t> iterations_{0};
  std::mutex ship_mu_;
  std::condition_variable ship_cv_;
  uint64_t shipped_iteration_ = 0;  // guarded by ship_mu_: the last shipment round's iteration
  bool shipments_ended_ = false;    // guarded by ship_mu_
  timeline::Timeline timeline_;
};

// Offsets of every rank's clock from rank 0's, measured NTP-style over `comm` (a collective:
// every member calls it): `rounds` times, rank 0 broadcasts its send time t1; each rank
// stamps the arrival t2 and its reply time t3 and gathers both back to rank 0, which stamps
// t4. A round's offset estimate is ((t2 - t1) + (t3 - t4)) / 2 with error at most rtt / 2,
// rtt = (t4 - t1) - (t3 - t2); the round with the smallest rtt wins. On rank 0 `*offsets_us`
// (indexed by rank) holds what to ADD to that rank's times to get rank 0's, and `*rtts_us`
// the winning rtts; other ranks get empty vectors.
Status EstimateClockOffsets(Communicator* comm, const timeline::Timeline& clock, int rounds,
                            std::vector<int64_t>* offsets_us, std::vector<int64_t>* rtts_us);

// Upper-case timeline name of an op ("ALLREDUCE", "ADD_PROCESS_SET").
std::string_view TimelineOpName(OpType type);
// "[2, 3]", the shape text of Horovod's timeline End args.
std::string ShapeText(std::span<const int64_t> shape);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_RUNTIME_TIMELINE_H_
