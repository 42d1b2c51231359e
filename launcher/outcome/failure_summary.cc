#include "launcher/outcome/failure_summary.h"

#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <cctype>
#include <optional>
#include <sstream>

#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/wait_status.h"

namespace hvd::launcher {
namespace {

// "600" for whole seconds, "0.5" otherwise.
std::string FormatSeconds(double s) {
  std::ostringstream text;
  text << s;
  return text.str();
}

// A lost connection or host that was not the first failure (the survivors of a vanished host
// may fail on their own before hvdrun's heartbeat says so): named in the headline too.
std::optional<std::string> OtherTransportError(const JobOutcome& outcome,
                                               const RankOutcome& first) {
  for (const RankOutcome& rank : outcome.ranks) {
    if (&rank == &first || !rank.transport_error) continue;
    if (first.transport_error && rank.host == first.host) continue;
    return *rank.transport_error;
  }
  return std::nullopt;
}

// The rank named first. Usually the first rank that failed. But a rank that reported failing on
// its own (an uncaught exception) shuts the runtime down as it exits, which fails its peers'
// collectives at once, and a peer may exit before it does (its own teardown is no faster): when
// the first rank to fail reported nothing, the first rank (lowest number) that did is named.
std::optional<int> BlamedRank(const JobOutcome& outcome) {
  if (!outcome.first_failed_rank) return std::nullopt;
  if (outcome.ranks[static_cast<size_t>(*outcome.first_failed_rank)].reported_failure) {
    return outcome.first_failed_rank;
  }
  for (const RankOutcome& rank : outcome.ranks) {
    if (rank.reported_failure) return rank.rank;
  }
  return outcome.first_failed_rank;
}

// "SIGKILL (signal 9)", with the kernel's reason when it gave one.
std::string DescribeEnd(const RankOutcome& rank) {
  return DescribeWaitStatus(rank.wait_status, rank.kill_cause.value_or(""));
}

// A Python exception's line, "Type: message" or a bare "Type" ("KeyboardInterrupt"): a dotted
// name up to the first colon.
bool ReadsAsExceptionLine(std::string_view line) {
  const size_t end = std::min(line.find(':'), line.size());
  if (end == 0 || !(std::isalpha(static_cast<unsigned char>(line[0])) || line[0] == '_')) {
    return false;
  }
  for (size_t i = 0; i < end; ++i) {
    const unsigned char c = static_cast<unsigned char>(line[i]);
    if (!std::isalnum(c) && c != '_' && c != '.') return false;
  }
  return end == line.size() || line.compare(end, 2, ": ") == 0;
}

bool FailedOnItsOwn(const RankOutcome& rank) {
  return rank.finished && !rank.stopped_by_hvdrun && !WaitStatusIsSuccess(rank.wait_status);
}

std::string Headline(const JobOutcome& outcome, const StderrTailFn& stderr_tail) {
  if (outcome.launcher_signal == SIGPIPE) {
    return "job stopped: hvdrun's output was closed (SIGPIPE); hvdrun exits " +
           std::to_string(ExitCodeOf(outcome));
  }
  if (outcome.launcher_signal) {
    return "job stopped: hvdrun received " + SignalName(*outcome.launcher_signal) +
           "; hvdrun exits " + std::to_string(ExitCodeOf(outcome));
  }
  if (outcome.start_timed_out) return "job stopped: start-up timed out";
  if (outcome.job_timed_out_s) {
    return "job stopped: it ran past --timeout (" + FormatSeconds(*outcome.job_timed_out_s) +
           " s); hvdrun exits " + std::to_string(ExitCodeOf(outcome));
  }
  if (outcome.launch_error) return "job stopped: " + *outcome.launch_error;
  if (outcome.first_failed_rank) {
    const RankOutcome& first = outcome.ranks[static_cast<size_t>(*outcome.first_failed_rank)];
    const RankOutcome& rank = outcome.ranks[static_cast<size_t>(*BlamedRank(outcome))];
    std::string why = rank.exec_error        ? *rank.exec_error
                      : rank.transport_error ? *rank.transport_error
                                             : DescribeEnd(rank);
    // What it reported, else what its stderr shows (never used to choose the rank: a peer's
    // traceback of the failed collective reads the same).
    std::optional<std::string> reported = rank.reported_failure;
    if (!reported && !rank.exec_error && !rank.transport_error && FailedOnItsOwn(rank)) {
      reported = PythonExceptionInTail(stderr_tail(rank.rank));
    }
    if (outcome.exited_before_cause && &rank == &first) {
      // It shut down (sys.exit, an exception) or died, and its peers' failures reached hvdrun
      // first.
      const RankOutcome& earlier = outcome.ranks[static_cast<size_t>(*outcome.exited_before_cause)];
      const bool died = WIFSIGNALED(rank.wait_status);
      why = DescribeEnd(rank) + (reported ? ": " + *reported : "") +
            (died ? " (its peers failed on its death; rank "
                  : " (its exit shut the job down; rank ") +
            std::to_string(earlier.rank) +
            ", failed by that, exited first: " + DescribeEnd(earlier) + ")";
    } else if (reported) {
      why = *reported;
      if (&rank == &first) {
        why = DescribeEnd(rank) + ": " + why;
      } else {
        why += " (reported before its exit; rank " + std::to_string(first.rank) +
               " exited first: " + DescribeEnd(first) + ")";
      }
    }
    if (std::optional<std::string> also = OtherTransportError(outcome, rank)) why += "; " + *also;
    if (why.ends_with('.')) why.pop_back();  // a message's full stop before the "; "
    return "job failed: rank " + std::to_string(rank.rank) + " on " + rank.host +
           " failed first: " + why + "; hvdrun exits " + std::to_string(ExitCodeOf(outcome));
  }
  return "job failed";
}

std::string ResultText(const RankOutcome& rank, bool first) {
  if (!rank.started) return "not started";
  if (!rank.finished) return "still running";
  std::string text = DescribeEnd(rank);
  if (rank.exec_error) text += ", " + *rank.exec_error;
  if (rank.transport_error) text += ", " + *rank.transport_error;
  if (first) text += "  <- first failure";
  // Killed by the signal, or ending with a code of its own (a peer's failure failed its
  // collectives as hvdrun's SIGTERM, or an elastic removal, was on its way): hvdrun does not
  // know which came first, so it does not say it stopped it.
  if (rank.stopped_by_hvdrun) {
    text += WIFSIGNALED(rank.wait_status) ? ", stopped by hvdrun"
                                          : ", exited as hvdrun was stopping it";
  }
  return text;
}

std::string Pad(std::string text, size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

}  // namespace

std::string_view WithoutTorchRankPrefix(std::string_view line) {
  if (!line.starts_with("[rank")) return line;
  size_t end = 5;
  while (end < line.size() && std::isdigit(static_cast<unsigned char>(line[end]))) ++end;
  if (end == 5 || line.substr(end, 2) != "]:") return line;
  line.remove_prefix(end + 2);
  if (line.starts_with(' ')) line.remove_prefix(1);
  return line;
}

std::optional<std::string> PythonExceptionInTail(const std::vector<std::string>& tail) {
  // The line after the last indented one (a frame, its code, its ^^^ marks).
  for (size_t i = tail.size(); i-- > 0;) {
    if (!WithoutTorchRankPrefix(tail[i]).starts_with("  ")) continue;
    if (i + 1 == tail.size()) return std::nullopt;
    const std::string_view line = WithoutTorchRankPrefix(tail[i + 1]);
    if (!ReadsAsExceptionLine(line)) return std::nullopt;
    return std::string(line);
  }
  return std::nullopt;
}

std::string FormatFailureSummary(const JobOutcome& outcome, const StderrTailFn& stderr_tail) {
  size_t host_width = 4;
  for (const RankOutcome& rank : outcome.ranks) host_width = std::max(host_width, rank.host.size());
  std::string text = Headline(outcome, stderr_tail) + "\n";
  text += "  " + Pad(outcome.unit, std::max<size_t>(6, outcome.unit.size() + 2)) +
          Pad("host", host_width + 2) + "result\n";
  const std::optional<int> blamed = BlamedRank(outcome);
  for (const RankOutcome& rank : outcome.ranks) {
    text += "  " + Pad(std::to_string(rank.rank), std::max<size_t>(6, outcome.unit.size() + 2)) +
            Pad(rank.host, host_width + 2) + ResultText(rank, blamed == rank.rank) + "\n";
  }
  // The named rank's lines first (shown even when hvdrun stopped it), then every other rank's
  // that failed on its own.
  auto tail = [&](const RankOutcome& rank) {
    const std::vector<std::string> lines = stderr_tail(rank.rank);
    if (lines.empty()) return;
    text += "last stderr lines of " + outcome.unit + " " + std::to_string(rank.rank) + ":\n";
    const size_t from = lines.size() - std::min(lines.size(), kShownStderrLines);
    for (size_t i = from; i < lines.size(); ++i) text += "  " + lines[i] + "\n";
  };
  if (blamed) tail(outcome.ranks[static_cast<size_t>(*blamed)]);
  for (const RankOutcome& rank : outcome.ranks) {
    if (FailedOnItsOwn(rank) && blamed != rank.rank) tail(rank);
  }
  return text;
}

}  // namespace hvd::launcher
