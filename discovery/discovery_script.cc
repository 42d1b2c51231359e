#include "discovery/discovery_script.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "discovery/discovery_output.h"
#include "discovery/text_lines.h"

namespace hvd::discovery {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kStderrKept = 2048;
constexpr int kMaxFdToClose = 65536;

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void RunChild(const char* command, int out_fd, int err_fd, pid_t parent) {
  ::setpgid(0, 0);
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  int null_fd = ::open("/dev/null", O_RDONLY);
  if (null_fd >= 0) ::dup2(null_fd, 0);
  ::dup2(out_fd, 1);
  ::dup2(err_fd, 2);
  if (::syscall(SYS_close_range, 3u, ~0u, 0u) != 0) {
    for (int fd = 3; fd < kMaxFdToClose; ++fd) ::close(fd);
  }
  ::execl("/bin/sh", "sh", "-c", command, static_cast<char*>(nullptr));
  ::_exit(127);
}

// How often a run checks DiscoveryScriptOptions::cancel.
constexpr int kCancelCheckMs = 50;

struct Captured {
  std::string out;
  std::string err;  // the last kStderrKept bytes
  bool timed_out = false;
  bool flooded = false;
  bool cancelled = false;
};

// Reads both pipes until they close, the deadline passes, stdout exceeds the cap or the run
// is cancelled.
void Capture(int out_fd, int err_fd, Clock::time_point deadline, size_t max_out,
             const std::atomic<bool>* cancel, Captured* c) {
  pollfd fds[2] = {{out_fd, POLLIN, 0}, {err_fd, POLLIN, 0}};
  char buf[16384];
  while (fds[0].fd >= 0 || fds[1].fd >= 0) {
    if (cancel != nullptr && cancel->load()) {
      c->cancelled = true;
      return;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) {
      c->timed_out = true;
      return;
    }
    int wait_ms = static_cast<int>(left.count()) + 1;
    if (cancel != nullptr) wait_ms = std::min(wait_ms, kCancelCheckMs);
    int ready = ::poll(fds, 2, wait_ms);
    if (ready < 0 && errno != EINTR) return;
    for (int i = 0; i < 2 && ready > 0; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      ssize_t n = ::read(fds[i].fd, buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        fds[i].fd = -1;
        continue;
      }
      std::string& sink = i == 0 ? c->out : c->err;
      sink.append(buf, static_cast<size_t>(n));
      if (i == 1 && sink.size() > kStderrKept) sink.erase(0, sink.size() - kStderrKept);
      if (i == 0 && sink.size() > max_out) {
        c->flooded = true;
        return;
      }
    }
  }
}

// Waits for `pid` until `deadline`, then kills its group and reaps it.
int Reap(pid_t pid, Clock::time_point deadline, bool kill_now, bool* timed_out) {
  int status = 0;
  if (!kill_now) {
    while (true) {
      pid_t got = ::waitpid(pid, &status, WNOHANG);
      if (got == pid) {
        ::kill(-pid, SIGKILL);  // whatever the script left running in its group
        return status;
      }
      if (got < 0 && errno != EINTR) return 0;
      if (Clock::now() >= deadline) {
        *timed_out = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  ::kill(-pid, SIGKILL);
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

std::string StderrNote(const std::string& err) {
  size_t begin = err.find_first_not_of(" \t\r\n");
  size_t end = err.find_last_not_of(" \t\r\n");
  std::string_view trimmed = begin == std::string::npos
                                 ? std::string_view()
                                 : std::string_view(err).substr(begin, end - begin + 1);
  if (trimmed.empty()) return " (no stderr)";
  return "; its stderr: " + std::string(trimmed);
}

std::string Describe(int status) {
  if (WIFEXITED(status)) return "exited with code " + std::to_string(WEXITSTATUS(status));
  int signo = WTERMSIG(status);
  const char* name = sigabbrev_np(signo);
  return std::string("was killed by ") + (name ? "SIG" + std::string(name) : "a signal") +
         " (signal " + std::to_string(signo) + ")";
}

std::string SecondsText(std::chrono::milliseconds ms) {
  double s = static_cast<double>(ms.count()) / 1000.0;
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%g", s);
  return buf;
}

}  // namespace

Result<std::vector<HostSlots>> RunDiscoveryScript(const DiscoveryScriptOptions& options) {
  const std::string name = "discovery script " + Quote(options.command);
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0)
    return Status::IoError(name + ": pipe: " + strerror(errno));
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    ::close(out_pipe[0]);
    ::close(out_pipe[1]);
    return Status::IoError(name + ": pipe: " + strerror(errno));
  }
  const Clock::time_point deadline = Clock::now() + options.timeout;
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid == 0) RunChild(options.command.c_str(), out_pipe[1], err_pipe[1], parent);
  ::close(out_pipe[1]);
  ::close(err_pipe[1]);
  if (pid < 0) {
    ::close(out_pipe[0]);
    ::close(err_pipe[0]);
    return Status::IoError(name + ": fork: " + strerror(errno));
  }
  ::setpgid(pid, pid);
  Captured captured;
  Capture(out_pipe[0], err_pipe[0], deadline, options.max_output_bytes, options.cancel, &captured);
  ::close(out_pipe[0]);
  ::close(err_pipe[0]);
  int status = Reap(pid, deadline, captured.timed_out || captured.flooded || captured.cancelled,
                    &captured.timed_out);
  if (captured.cancelled) return Status::Aborted(name + " was stopped: the job is ending");
  if (captured.flooded) {
    return Status::InvalidArgument(name + " printed more than " +
                                   std::to_string(options.max_output_bytes) +
                                   " bytes and was killed");
  }
  if (captured.timed_out) {
    return Status::Timeout(name + " did not finish within " + SecondsText(options.timeout) +
                           " s and was killed" + StderrNote(captured.err));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return Status::RemoteError(name + " " + Describe(status) + StderrNote(captured.err));
  }
  Result<std::vector<HostSlots>> hosts = ParseDiscoveryOutput(captured.out, options.default_slots);
  if (!hosts.ok()) {
    // "discovery script output line 2: ..." -> "discovery script './h.sh' output line 2: ..."
    std::string message = hosts.status().message();
    const std::string generic = "discovery script output";
    if (message.starts_with(generic)) message.replace(0, generic.size(), name + " output");
    return Status::InvalidArgument(message);
  }
  return hosts;
}

}  // namespace hvd::discovery
