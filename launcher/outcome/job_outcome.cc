#include "launcher/outcome/job_outcome.h"

#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/wait_status.h"

namespace hvd::launcher {

int ExitCodeOf(const JobOutcome& outcome) {
  if (outcome.launcher_signal) return kExitSignalBase + *outcome.launcher_signal;
  if (outcome.start_timed_out || outcome.job_timed_out_s) return kExitTimeout;
  if (outcome.launch_error) return kExitLaunchFailed;
  if (outcome.first_failed_rank) {
    const RankOutcome& failed = outcome.ranks[static_cast<size_t>(*outcome.first_failed_rank)];
    return ExitCodeOfWaitStatus(failed.wait_status);
  }
  return kExitOk;
}

}  // namespace hvd::launcher
