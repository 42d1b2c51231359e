#include "launcher/outcome/job_outcome.h"

#include <sys/wait.h>

#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/wait_status.h"

namespace hvd::launcher {

void ApplyFailureReports(JobOutcome& outcome) {
  for (RankOutcome& rank : outcome.ranks) {
    if (rank.reported_failure && rank.finished && WIFEXITED(rank.wait_status) &&
        !WaitStatusIsSuccess(rank.wait_status)) {
      rank.stopped_by_hvdrun = false;
    }
  }
}

int ExitCodeOf(const JobOutcome& outcome) {
  if (outcome.launcher_signal) return kExitSignalBase + *outcome.launcher_signal;
  // Every rank was killed by hvdrun, so none failed first: without this, 0 (until 2026-12-01).
  if (outcome.internal_error) return kExitInternal;
  if (outcome.start_timed_out || outcome.job_timed_out_s) return kExitTimeout;
  if (outcome.launch_error) return kExitLaunchFailed;
  if (outcome.first_failed_rank) {
    const RankOutcome& failed = outcome.ranks[static_cast<size_t>(*outcome.first_failed_rank)];
    return ExitCodeOfWaitStatus(failed.wait_status);
  }
  return kExitOk;
}

}  // namespace hvd::launcher
