#ifndef HVD_LAUNCHER_OUTCOME_JOB_OUTCOME_H_
#define HVD_LAUNCHER_OUTCOME_JOB_OUTCOME_H_

#include <optional>
#include <string>
#include <vector>

// What happened to a job, as job control saw it; input to the exit code and the failure
// summary. Plain data.
namespace hvd::launcher {

struct RankOutcome {
  int rank = 0;
  std::string host;
  bool remote = false;  // on another machine (under hvd-agent)
  bool started = false;
  bool finished = false;  // reaped; wait_status is valid
  int wait_status = 0;    // as from waitpid()
  // Ended after hvdrun signalled it (or, elastic, after it read its removal); the summary says
  // "stopped by hvdrun" where a signal ended it, "exited as hvdrun was stopping it" otherwise.
  bool stopped_by_hvdrun = false;
  std::optional<std::string> exec_error;
  // A remote rank whose connection ended before it reported ("connection to root@h2:22
  // lost ..."); its wait_status is then exit code 255.
  std::optional<std::string> transport_error;
  // Why a rank killed by SIGKILL (or exit code 137 behind a shell) that hvdrun did not stop
  // died, where the host knows: the kernel's OOM killer (launcher/local/oom_kills.h).
  std::optional<std::string> kill_cause;
  // What the rank reported failing on its own before it exited (an uncaught exception:
  // Runtime::ReportFailure), read from the rendezvous server once the job ended.
  std::optional<std::string> reported_failure;
  // The rank whose shutdown or loss failed this rank's collectives, as its runtime told hvdrun
  // (control::ShutdownCauseKey), read once the job ended.
  std::optional<int> shut_down_by;
};

// Why the job ended, in the order exit-code precedence looks at it.
struct JobOutcome {
  std::optional<int> launcher_signal;  // SIGINT/SIGTERM/SIGHUP hvdrun received
  bool start_timed_out = false;
  // The job ran past --timeout (this many seconds) and hvdrun stopped it.
  std::optional<double> job_timed_out_s;
  std::optional<std::string> launch_error;  // a rank could not be spawned at all
  // hvdrun itself failed mid-job (its poll of the ranks' descriptors) and stopped every rank.
  std::optional<std::string> internal_error;
  std::optional<int> first_failed_rank;
  // When first_failed_rank is a rank whose shutdown failed its peers: the peer that exited
  // (failing) before it did (JobController "Who failed first").
  std::optional<int> exited_before_cause;
  std::vector<RankOutcome> ranks;  // ranks[i].rank == i
  // What the summary calls a row: "rank", or "worker" in an elastic job (whose rows are its
  // workers, by id; their ranks change from round to round).
  std::string unit = "rank";
};

// Once the ranks' reports are in (RankOutcome::reported_failure): a rank that reported failing
// on its own and then exited with a code of its own, not by a signal, ended by its failure even
// where hvdrun had signalled it meanwhile (its SIGTERM came too late to matter): not "stopped by
// hvdrun", so the summary shows its traceback.
void ApplyFailureReports(JobOutcome& outcome);

// hvdrun's exit code for `outcome` (launcher/outcome/exit_codes.h): 128+signal when hvdrun was
// signalled, kExitInternal when hvdrun failed itself, kExitTimeout (start-up or --timeout),
// kExitLaunchFailed, the first failing rank's code, else 0.
int ExitCodeOf(const JobOutcome& outcome);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_OUTCOME_JOB_OUTCOME_H_
