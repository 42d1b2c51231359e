#ifndef HVD_TIMELINE_TIMELINE_REPAIR_H_
#define HVD_TIMELINE_TIMELINE_REPAIR_H_

#include <string>

#include "common/status.h"

// The one torn form a killed TimelineWriter can leave (timeline_writer.h): killed between the
// two writes of a growth, the file holds the records, spaces, the old closing "\n]\n", only
// spaces, and the new closing "\n]\n" at its end. Everything up to the first bracket is intact;
// a strict JSON parser refuses the second. Repairing turns the old closing bracket into spaces,
// the write the writer did not get to. A file of any other form is left as it is.
//
// hvdrun and hvd-agent repair the job's timeline once its ranks on the host have ended
// (launcher/rank_leftovers.h); `hvd-timeline summary` reads a torn file as repaired and
// `hvd-timeline repair FILE` repairs one by hand.

namespace hvd::timeline {

// True when `text` had the torn form and was repaired in memory.
bool RepairTornTimelineText(std::string* text);

// True when the file had the torn form and was repaired (three bytes rewritten in place; the
// file is read from its end, so a large trace costs a few small reads). False for any other
// form. An error names the file when it cannot be read or written.
Result<bool> RepairTornTimelineFile(const std::string& path);

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_TIMELINE_REPAIR_H_
