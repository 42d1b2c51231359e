#ifndef HVD_RUNTIME_RUNTIME_TIMELINE_H_
#define HVD_RUNTIME_RUNTIME_TIMELINE_H_

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/message.h"
#include "timeline/timeline.h"

namespace hvd::runtime {

// RuntimeTimeline is the runtime's switch in front of hvd::timeline::Timeline. Only global
// rank 0 owns one (Horovod: the coordinator writes the whole job's timeline). Recording code
// tests on() -- one relaxed atomic load -- before building any event, so a disabled timeline
// costs one branch per response. The Timeline itself never blocks the caller (bounded queue,
// drops are counted), so the background thread may record freely.
//
// Threading: on()/timeline()/mark_cycles() from any thread; Start/Stop are serialized by an
// internal mutex (user threads via hvd_start_timeline, the runtime at init/shutdown). A
// racing record after Stop is a no-op inside Timeline.
class RuntimeTimeline {
 public:
  RuntimeTimeline() = default;
  ~RuntimeTimeline() { Stop(); }

  bool on() const { return on_.load(std::memory_order_relaxed); }
  timeline::Timeline& timeline() { return timeline_; }

  // Switches to `path` (restart after Stop, or while running, both work).
  Status Start(const std::string& path, bool mark_cycles);
  void Stop();
  void MarkCycleStart();

 private:
  std::mutex mu_;
  std::atomic<bool> on_{false};
  std::atomic<bool> mark_cycles_{false};
  timeline::Timeline timeline_;
};

// Upper-case timeline name of an op ("ALLREDUCE", "ADD_PROCESS_SET").
std::string TimelineOpName(OpType type);
// "[2, 3]", the shape text of Horovod's timeline End args.
std::string ShapeText(const std::vector<int64_t>& shape);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_RUNTIME_TIMELINE_H_
