#ifndef HVD_TIMELINE_TIMELINE_EVENT_H_
#define HVD_TIMELINE_TIMELINE_EVENT_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"

// TimelineEvent is what the runtime reports to the timeline, before it is mapped to trace
// rows: one step of Horovod's per-tensor state machine
//   NegotiateStart (coordinator) -> NegotiateRankReady* -> NegotiateEnd ->
//   Start -> (ActivityStart -> ActivityEnd)* -> End
// plus Queue spans (enqueue -> op start, on a row of their own) and CycleStart marks. Events carry
// the rank they happened on and a time on that rank's clock, so a non-coordinator rank can record
// its own events, ship them to rank 0 (EncodeEvents/DecodeEvents) and have them drawn on its own
// row. Plain value type.
namespace hvd::timeline {

enum class EventType {
  kNegotiateStart,      // name = request type, e.g. "ALLREDUCE" -> "NEGOTIATE_ALLREDUCE"
  kNegotiateRankReady,  // ready_rank = the rank whose request arrived
  kNegotiateEnd,
  kStart,          // name = response type, e.g. "ALLREDUCE"
  kActivityStart,  // name = activity, e.g. "MEMCPY_IN_FUSION_BUFFER", "GLOO_ALLREDUCE"
  kActivityEnd,
  kEnd,         // dtype, shape and (when >= 0) bytes go into the record's args
  kCycleStart,  // only drawn when the timeline marks cycles
  kQueue,       // complete span [time_us, time_us + dur_us): the tensor waited in the queue
                // from its enqueue to the start of its op; name = op type ("ALLREDUCE")
};

const char* EventTypeName(EventType type);

struct TimelineEvent {
  EventType type = EventType::kCycleStart;
  int rank = 0;         // where it happened
  int64_t time_us = 0;  // microseconds since the Unix epoch on that rank's clock
  std::string tensor;
  std::string name;
  int ready_rank = -1;
  std::string dtype;
  std::string shape;
  int64_t bytes = -1;
  int64_t dur_us = 0;  // kQueue
};

// Compact text (one event per line, tab-separated, escaped); the inverse of DecodeEvents.
std::string EncodeEvents(const std::vector<TimelineEvent>& events);
// kInvalidArgument (quoting the problem) when `text` was not produced by EncodeEvents.
Result<std::vector<TimelineEvent>> DecodeEvents(std::string_view text);

// What a rank ships to rank 0 in all-ranks mode: "<events it dropped>\n<EncodeEvents text>".
// It crosses hosts on the data connections, which nothing authenticates past the TCP
// transport's handshake, so rank 0 decodes it as outside input. kInvalidArgument naming the
// problem when `text` is not one.
std::string EncodeShipment(uint64_t dropped, const std::vector<TimelineEvent>& events);
Result<std::vector<TimelineEvent>> DecodeShipment(std::string_view text, uint64_t* dropped);

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_TIMELINE_EVENT_H_
