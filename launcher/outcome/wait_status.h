#ifndef HVD_LAUNCHER_OUTCOME_WAIT_STATUS_H_
#define HVD_LAUNCHER_OUTCOME_WAIT_STATUS_H_

#include <string>
#include <string_view>

// Helpers over the `status` word waitpid() returns, shared by job control (exit codes) and
// the failure summary (wording). Pure functions; thread-safe.
namespace hvd::launcher {

// "SIGKILL", "SIGSEGV", ...; "signal <n>" for a number the C library cannot name.
std::string SignalName(int signo);

// hvdrun's code for a finished rank: its exit code, or 128+N when killed by signal N.
int ExitCodeOfWaitStatus(int wait_status);

// True when the rank exited 0.
bool WaitStatusIsSuccess(int wait_status);

// "exit code 3", "SIGKILL (signal 9)".
std::string DescribeWaitStatus(int wait_status);
// The same with why the rank's host says it was killed, when it says ("SIGKILL (signal 9):
// killed by the kernel's OOM killer (...)"; launcher/local/oom_kills.h); `kill_cause` "" = none.
std::string DescribeWaitStatus(int wait_status, std::string_view kill_cause);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_OUTCOME_WAIT_STATUS_H_
