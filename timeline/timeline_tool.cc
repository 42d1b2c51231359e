#include "timeline/timeline_tool.h"

#include <fmt/format.h>

#include <CLI/CLI.hpp>

#include "timeline/timeline_repair.h"
#include "timeline/timeline_summary.h"

namespace hvd::timeline {
namespace {

constexpr const char* kDescription =
    "hvd-timeline: inspects timelines written with hvdrun --timeline-filename (or by Horovod).";
constexpr const char* kSummaryHelp =
    "Prints, per operation type, per tensor (and per rank for --timeline-all-ranks traces), "
    "the count, total and mean time, bytes, and the share of time spent negotiating, "
    "transferring (backend collectives) and copying; then, per rank, the gaps between its "
    "collectives: 'queued' where a tensor was already enqueued when the earlier one ended (the "
    "backend idled while work waited), 'idle' where none was. A file torn mid-growth, an "
    "array never closed (Horovod's) or a file cut inside an event is read as repaired, and the "
    "summary says so.";
constexpr const char* kRepairHelp =
    "Mends a timeline in place: one torn by a writer killed while it grew the file (two "
    "closing brackets; hvdrun repairs its job's timeline itself when it outlives the writer), "
    "an array never closed (Horovod's), or a file cut inside an event (cut back to the last "
    "complete event, then closed). Exits 1 when the file is not a timeline.";

int Repair(const std::string& path, std::ostream& out, std::ostream& err) {
  Result<TimelineCheck> check = RepairTimelineFile(path);
  if (!check.ok()) {
    err << "hvd-timeline: " << check.status().message() << "\n";
    return kToolFileError;
  }
  const TimelineCheck& c = *check;
  switch (c.shape) {
    case TimelineShape::kComplete:
      out << path << ": a complete timeline; nothing to repair\n";
      return kToolOk;
    case TimelineShape::kTornGrowth:
      out << path
          << ": repaired (torn mid-growth: the closing bracket of the torn growth is now "
             "spaces)\n";
      return kToolOk;
    case TimelineShape::kUnclosed:
      out << path
          << fmt::format(
                 ": repaired (the array was never closed, as Horovod leaves it: closed "
                 "after its {} events)\n",
                 c.events);
      return kToolOk;
    case TimelineShape::kTruncated:
      out << path
          << fmt::format(
                 ": repaired (truncated at byte {} inside an event: cut back to the end "
                 "of the last complete event, byte {}, and closed the array; {} events "
                 "kept)\n",
                 c.size, c.complete_end, c.events);
      return kToolOk;
    case TimelineShape::kEmpty:
      err << "hvd-timeline: " << path
          << fmt::format(": empty ({} bytes): not a timeline; left as it is\n", c.size);
      return kToolFileError;
    case TimelineShape::kNotTimeline:
      break;
  }
  err << "hvd-timeline: " << path << ": not a timeline: " << c.detail << "; left as it is\n";
  return kToolFileError;
}

int Summary(const std::string& path, std::ostream& out, std::ostream& err) {
  Result<TimelineSummary> summary = SummarizeFile(path);
  if (!summary.ok()) {
    err << "hvd-timeline: " << summary.status().message() << "\n";
    return kToolFileError;
  }
  out << "timeline " << path << "\n\n" << FormatSummary(*summary);
  return kToolOk;
}

}  // namespace

int RunTimelineTool(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  CLI::App app{kDescription, "hvd-timeline"};
  app.require_subcommand(1);
  std::string path;
  app.footer("Exit codes: 0 ok; 1 the file is missing, unreadable or not a timeline; 2 usage.");
  CLI::App* summary = app.add_subcommand("summary", "Where the time of a timeline went");
  summary->add_option("FILE", path, "The timeline (JSON trace)")->required();
  summary->footer(kSummaryHelp);
  CLI::App* repair = app.add_subcommand("repair", "Mends a damaged timeline in place");
  repair->add_option("FILE", path, "The timeline to mend")->required();
  repair->footer(kRepairHelp);
  if (!args.empty() && !args[0].starts_with("-") && args[0] != "help" && args[0] != "summary" &&
      args[0] != "repair") {
    err << "hvd-timeline: unknown command '" << args[0] << "'\n" << app.help();
    return kToolUsageError;
  }
  // `hvd-timeline help` as well as --help; CLI11 takes the arguments last first.
  std::vector<std::string> reversed(args.rbegin(), args.rend());
  if (args.size() == 1 && args[0] == "help") reversed = {"--help"};
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    const int code = app.exit(e, out, err);
    return code == 0 ? kToolOk : kToolUsageError;
  }
  return summary->parsed() ? Summary(path, out, err) : Repair(path, out, err);
}

}  // namespace hvd::timeline
