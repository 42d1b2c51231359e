#ifndef HVD_TIMELINE_TIMELINE_REPAIR_H_
#define HVD_TIMELINE_TIMELINE_REPAIR_H_

#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

// The one torn form a killed TimelineWriter can leave (timeline_writer.h): killed between the
// two writes of a growth, the file holds the records, spaces, the old closing "\n]\n", only
// spaces, and the new closing "\n]\n" at its end. Everything up to the first bracket is intact;
// a strict JSON parser refuses the second. Repairing turns the old closing bracket into spaces,
// the write the writer did not get to. A file of any other form is left as it is.
//
// hvdrun and hvd-agent repair the job's timeline once its ranks on the host have ended
// (launcher/local/rank_leftovers.h); `hvd-timeline summary` reads a torn file as repaired and
// `hvd-timeline repair FILE` repairs one by hand.
//
// CheckTimelineText / RepairTimelineFile (the tool's) also name and mend the files no writer
// of ours leaves but a reader meets: a JSON array never closed (Horovod writes "[" and each
// event followed by ",", and never the "]"), or a file cut inside an event (a copy or a disk
// that filled up). Both keep every complete event; a repair cuts the partial event, if any,
// and closes the array. Anything else (no bytes, not JSON, JSON that is not a trace) is named
// and never written to.

namespace hvd::timeline {

// True when `text` had the torn form and was repaired in memory.
bool RepairTornTimelineText(std::string* text);

// True when the file had the torn form and was repaired (three bytes rewritten in place; the
// file is read from its end, so a large trace costs a few small reads). False for any other
// form. An error names the file when it cannot be read or written.
Result<bool> RepairTornTimelineFile(const std::string& path);

enum class TimelineShape {
  kComplete,     // valid JSON: an array of events or {"traceEvents": [...]}
  kTornGrowth,   // the writer's torn form (above)
  kUnclosed,     // "[" and complete events, the array never closed (Horovod's form)
  kTruncated,    // cut inside an event; the events before it are complete
  kEmpty,        // no bytes, or whitespace only
  kNotTimeline,  // not JSON, or JSON that is not a trace
};

struct TimelineCheck {
  TimelineShape shape = TimelineShape::kNotTimeline;
  int64_t size = 0;          // bytes checked
  int64_t events = 0;        // kUnclosed, kTruncated: the complete events kept by a repair
  int64_t complete_end = 0;  // kUnclosed, kTruncated: where the last complete event ends
  std::string detail;        // kNotTimeline: why (quotes the parser, with the byte)
};

// The whole file. Errors name it: kNotFound, kIoError, kInvalidArgument for a directory.
Result<std::string> ReadTimelineFile(const std::string& path);

// Pure; reads the whole text (JSON parse of a complete file, a scan of a damaged one).
TimelineCheck CheckTimelineText(std::string_view text);
bool Repairable(const TimelineCheck& check);
// Makes `text` (as checked by `check`) a complete timeline; false unless Repairable(check).
bool RepairTimelineText(const TimelineCheck& check, std::string* text);
// Checks the file and repairs it in place when Repairable: the torn growth as above; an
// unclosed or truncated array is cut to its last complete event (truncate first, so a repair
// killed midway leaves an unclosed array, still repairable) and closed with "\n]\n". Returns
// the check of the file as it was. Errors name the file (missing, a directory, unreadable).
Result<TimelineCheck> RepairTimelineFile(const std::string& path);

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_TIMELINE_REPAIR_H_
