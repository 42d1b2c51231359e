#ifndef HVD_TIMELINE_TIMELINE_TOOL_H_
#define HVD_TIMELINE_TIMELINE_TOOL_H_

#include <ostream>
#include <string>
#include <vector>

// The `hvd-timeline` command, minus main(): `hvd-timeline summary FILE` prints the tables
// of FormatSummary; `hvd-timeline repair FILE` mends a file torn mid-growth
// (timeline_repair.h). Exit codes: 0 success; 1 the file is missing, unreadable or not a
// trace (the message names the file); 2 usage error. Thread-compatible.
namespace hvd::timeline {

inline constexpr int kToolOk = 0;
inline constexpr int kToolFileError = 1;
inline constexpr int kToolUsageError = 2;

// `args` excludes the program name.
int RunTimelineTool(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace hvd::timeline

#endif  // HVD_TIMELINE_TIMELINE_TOOL_H_
