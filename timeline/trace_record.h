#ifndef HVD_TIMELINE_TRACE_RECORD_H_
#define HVD_TIMELINE_TRACE_RECORD_H_

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

// One Chrome trace-event record
// (https://docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU), already
// resolved to a process/thread row, as it travels from the producer to the timeline's writer
// thread. Plain value type.
namespace hvd::timeline {

using TraceArg = std::variant<int64_t, std::string>;

struct TraceRecord {
  // 'B' begin, 'E' end, 'X' complete (with dur_us), 'i' instant (global scope),
  // 'M' metadata (no ts).
  char phase = 'M';
  std::string name;
  int pid = 0;
  int tid = 0;
  int64_t ts_us = 0;  // microseconds since the timeline started
  std::vector<std::pair<std::string, TraceArg>> args;
  int64_t dur_us = 0;  // 'X' only
};

// One JSON object, no trailing separator. Invalid UTF-8 in names is replaced, so the
// output is always valid JSON.
std::string ToJson(const TraceRecord& record);

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_TRACE_RECORD_H_
