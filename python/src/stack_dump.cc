#include "stack_dump.h"

#include <Python.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>

namespace hvd::python {
namespace {

// Written once by RouteStackDumps before the handler is installed; read by the handler only.
struct sigaction g_all_threads {};
struct sigaction g_main_only {};
int g_signo = 0;
int g_all_threads_signo = 0;
int g_main_only_signo = 0;
// A request sent on to the main thread and not yet handled there: later ones are dropped, not
// queued (a real-time signal queues each one sent, up to the user's RLIMIT_SIGPENDING, which
// every process of the user shares), so a flood of requests costs one dump.
std::atomic<bool> g_forwarded{false};
// Cleared by UnrouteStackDumps: faulthandler's handlers are gone at the interpreter's
// finalization, and the main thread must not call them then.
std::atomic<bool> g_routing{false};
static_assert(std::atomic<bool>::is_always_lock_free, "used in a signal handler");

void Call(const struct sigaction& act, int signo) {
  if ((act.sa_flags & SA_SIGINFO) != 0) {
    if (act.sa_sigaction != nullptr) act.sa_sigaction(signo, nullptr, nullptr);
  } else if (act.sa_handler != SIG_DFL && act.sa_handler != SIG_IGN && act.sa_handler != nullptr) {
    act.sa_handler(signo);
  }
}

void Route(int) {
  const int saved_errno = errno;
  const pid_t pid = getpid();
  if (static_cast<pid_t>(syscall(SYS_gettid)) != pid) {
    // Pending there while the main thread blocks the signal.
    if (!g_forwarded.exchange(true)) syscall(SYS_tgkill, pid, pid, g_signo);
    errno = saved_errno;
    return;
  }
  g_forwarded.store(false);
  if (!g_routing.load()) {
    errno = saved_errno;
    return;
  }
  if (PyGILState_Check() != 0) {
    Call(g_all_threads, g_all_threads_signo);
  } else {
    static const char kNote[] =
        "hvd: the main thread's Python stack only: it was not running Python (the GIL was "
        "free), so other threads may be, and reading their frames now could crash this process\n";
    ssize_t ignored = write(2, kNote, sizeof(kNote) - 1);
    (void)ignored;
    Call(g_main_only, g_main_only_signo);
  }
  errno = saved_errno;
}

}  // namespace

bool RouteStackDumps(int signo, int all_threads_signo, int main_only_signo) {
  struct sigaction all_threads {};
  struct sigaction main_only {};
  if (sigaction(all_threads_signo, nullptr, &all_threads) != 0 ||
      sigaction(main_only_signo, nullptr, &main_only) != 0) {
    return false;
  }
  g_all_threads = all_threads;
  g_main_only = main_only;
  static const int at_fork = pthread_atfork(nullptr, nullptr, [] { g_forwarded.store(false); });
  (void)at_fork;  // a child starts with no request of its parent's pending
  g_signo = signo;
  g_all_threads_signo = all_threads_signo;
  g_main_only_signo = main_only_signo;
  struct sigaction route {};
  route.sa_handler = Route;
  sigemptyset(&route.sa_mask);
  // SA_RESTART: a request must not fail the main thread's system calls with EINTR.
  route.sa_flags = SA_RESTART | SA_ONSTACK;
  g_routing.store(true);
  if (sigaction(signo, &route, nullptr) != 0) {
    g_routing.store(false);
    return false;
  }
  return true;
}

void UnrouteStackDumps() {
  if (!g_routing.exchange(false)) return;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  sigaction(g_signo, &ignore, nullptr);  // also drops a request pending on the main thread
}

}  // namespace hvd::python
