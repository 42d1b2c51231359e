#include "timeline/timeline_tool.h"

#include "timeline/timeline_repair.h"
#include "timeline/timeline_summary.h"

namespace hvd::timeline {
namespace {

constexpr const char* kUsage =
    "usage: hvd-timeline summary FILE\n"
    "       hvd-timeline repair FILE\n"
    "\n"
    "summary: summarises a timeline written with hvdrun --timeline-filename (or by\n"
    "Horovod): per operation type and per tensor, the count, total and mean time, bytes,\n"
    "and the share of time spent negotiating, transferring (backend collectives) and\n"
    "copying.\n"
    "repair: fixes a timeline whose writer was killed while it grew the file (two closing\n"
    "brackets; hvdrun repairs its job's timeline itself when it outlives the writer).\n";

}  // namespace

int RunTimelineTool(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  if (args.size() == 1 && (args[0] == "--help" || args[0] == "-h" || args[0] == "help")) {
    out << kUsage;
    return kToolOk;
  }
  if (args.empty() || (args[0] != "summary" && args[0] != "repair")) {
    if (!args.empty()) err << "hvd-timeline: unknown command '" << args[0] << "'\n";
    err << kUsage;
    return kToolUsageError;
  }
  if (args.size() != 2) {
    err << "hvd-timeline: '" << args[0] << "' takes exactly one FILE\n" << kUsage;
    return kToolUsageError;
  }
  if (args[0] == "repair") {
    Result<bool> repaired = RepairTornTimelineFile(args[1]);
    if (!repaired.ok()) {
      err << "hvd-timeline: " << repaired.status().message() << "\n";
      return kToolFileError;
    }
    out << args[1]
        << (*repaired ? ": repaired (the closing bracket of the torn growth is now spaces)\n"
                      : ": not torn mid-growth; left as it is\n");
    return kToolOk;
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
