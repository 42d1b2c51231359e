#include "timeline/timeline_tool.h"

#include "timeline/timeline_summary.h"

namespace hvd::timeline {
namespace {

constexpr const char* kUsage =
    "usage: hvd-timeline summary FILE\n"
    "\n"
    "Summarises a timeline written with hvdrun --timeline-filename (or by Horovod):\n"
    "per operation type and per tensor, the count, total and mean time, bytes, and the\n"
    "share of time spent negotiating, transferring (backend collectives) and copying.\n";

}  // namespace

int RunTimelineTool(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    out << kUsage;
    return kToolOk;
  }
  if (args.empty() || args[0] != "summary") {
    if (!args.empty()) err << "hvd-timeline: unknown command '" << args[0] << "'\n";
    err << kUsage;
    return kToolUsageError;
  }
  if (args.size() != 2) {
    err << "hvd-timeline: 'summary' takes exactly one FILE\n" << kUsage;
    return kToolUsageError;
  }
  Result<TimelineSummary> summary = SummarizeFile(args[1]);
  if (!summary.ok()) {
    err << "hvd-timeline: " << summary.status().message() << "\n";
    return kToolFileError;
  }
  out << "timeline " << args[1] << "\n\n" << FormatSummary(*summary);
  return kToolOk;
}

}  // namespace hvd::timeline
