#include "launcher/outcome/wait_status.h"

#include <string.h>
#include <sys/wait.h>

#include "launcher/outcome/exit_codes.h"

namespace hvd::launcher {

std::string SignalName(int signo) {
  const char* abbrev = sigabbrev_np(signo);
  if (abbrev == nullptr) return "signal " + std::to_string(signo);
  return std::string("SIG") + abbrev;
}

int ExitCodeOfWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return WEXITSTATUS(wait_status);
  if (WIFSIGNALED(wait_status)) return kExitSignalBase + WTERMSIG(wait_status);
  return kExitInternal;
}

bool WaitStatusIsSuccess(int wait_status) {
  return WIFEXITED(wait_status) && WEXITSTATUS(wait_status) == 0;
}

std::string DescribeWaitStatus(int wait_status) {
  if (WIFEXITED(wait_status)) return "exit code " + std::to_string(WEXITSTATUS(wait_status));
  if (WIFSIGNALED(wait_status)) {
    int sig = WTERMSIG(wait_status);
    return SignalName(sig) + " (signal " + std::to_string(sig) + ")";
  }
  return "unknown wait status " + std::to_string(wait_status);
}

std::string DescribeWaitStatus(int wait_status, std::string_view kill_cause) {
  std::string text = DescribeWaitStatus(wait_status);
  if (!kill_cause.empty()) text.append(": ").append(kill_cause);
  return text;
}

}  // namespace hvd::launcher
