#ifndef HVD_RUNTIME_CORE_RUNTIME_TIMELINE_H_
#define HVD_RUNTIME_CORE_RUNTIME_TIMELINE_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "runtime/core/message.h"
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
  ~RuntimeTimeline() { Stop(); }

  bool on() const { return on_.load(std::memory_order_relaxed); }
  bool all_ranks() const { return all_ranks_; }
  int rank() const { return rank_; }
  timeline::Timeline& timeline() { return timeline_; }

  // Rank 0: switches to `path` (restart after Stop, or while running, both work). Other
  // ranks (all-ranks mode): starts collecting; `path` is ignored.
  Status Start(const std::string& path, bool mark_cycles);
  void Stop();
  void MarkCycleStart();

  // Ranks other than 0: the events collected since the last call, encoded; "" when the
  // timeline is off. Rank 0: "".
  std::string TakeShipment();
  // Rank 0: writes the events of `rank`'s shipment (ignored while the timeline is off).
  void ReceiveShipment(int rank, std::string_view shipment);
  // Rank 0: offset added to `rank`'s event times (rank 0's clock minus that rank's).
  void SetClockOffset(int rank, int64_t offset_us);

 private:
  const int rank_;
  const bool all_ranks_;
  std::mutex mu_;
  std::atomic<bool> on_{false};
  std::atomic<bool> mark_cycles_{false};
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
std::string TimelineOpName(OpType type);
// "[2, 3]", the shape text of Horovod's timeline End args.
std::string ShapeText(const std::vector<int64_t>& shape);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_RUNTIME_TIMELINE_H_
