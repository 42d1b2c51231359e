#ifndef HVD_LAUNCHER_OUTCOME_FAILURE_SUMMARY_H_
#define HVD_LAUNCHER_OUTCOME_FAILURE_SUMMARY_H_

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/outcome/job_outcome.h"

namespace hvd::launcher {

// Returns the last stderr lines of a rank (OutputForwarder::StderrTail).
using StderrTailFn = std::function<std::vector<std::string>(int rank)>;

// How many of a rank's last stderr lines the summary shows; the readers of a tail
// (PythonExceptionInTail, the hints) get more (OutputForwarder::Options::stderr_tail_lines).
inline constexpr size_t kShownStderrLines = 5;

// `line` without the "[rank1]: " (or "[rank1]:") that torch 2.x puts before every line of a rank
// once torch.distributed is initialised. Pure.
std::string_view WithoutTorchRankPrefix(std::string_view line);

// The exception a Python rank died of, from the last lines of its stderr: the line after the last
// indented one (a frame, its code or its ^^^ marks), when it reads as a traceback's exception
// line ("Type: message", a dotted type, or a bare "Type"); the lines after it are the message's
// own or anything printed at exit (torch's warnings). torch's "[rankN]: " prefixes are dropped.
// For ranks that report nothing (plain torch.distributed scripts, failures before hvd.init()).
// Pure.
std::optional<std::string> PythonExceptionInTail(const std::vector<std::string>& tail);

// The report printed to stderr when a job does not succeed: one headline naming the cause
// (the first failing rank with its host and exit code or signal name, or hvdrun's own
// signal or timeout), a table of every rank (rank, host, result), and the last stderr
// lines of each rank that failed on its own. Pure; thread-safe.
std::string FormatFailureSummary(const JobOutcome& outcome, const StderrTailFn& stderr_tail);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_OUTCOME_FAILURE_SUMMARY_H_
