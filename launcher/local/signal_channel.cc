#include "launcher/local/signal_channel.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <string>
#include <utility>

namespace hvd::launcher {

Result<SignalChannel> SignalChannel::Open() {
  // A SIGCHLD left ignored by whoever started hvdrun survives exec (here and into the
  // guardians): children are then reaped by the kernel and no SIGCHLD ever arrives, so hvdrun
  // and its guardians waited forever (until 2026-12-01). The default action is what the
  // signalfd needs.
  struct sigaction child {};
  child.sa_handler = SIG_DFL;
  sigemptyset(&child.sa_mask);
  ::sigaction(SIGCHLD, &child, nullptr);
  sigset_t watched;
  sigemptyset(&watched);
  for (int signo : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGCHLD, SIGPIPE}) sigaddset(&watched, signo);
  sigset_t previous;
  int rc = ::pthread_sigmask(SIG_BLOCK, &watched, &previous);
  if (rc != 0) return Status::Internal(std::string("pthread_sigmask: ") + strerror(rc));
  int fd = ::signalfd(-1, &watched, SFD_NONBLOCK | SFD_CLOEXEC);
  if (fd < 0) {
    int error = errno;
    ::pthread_sigmask(SIG_SETMASK, &previous, nullptr);
    return Status::Internal(std::string("signalfd: ") + strerror(error));
  }
  return SignalChannel(fd, previous);
}

SignalChannel::SignalChannel(SignalChannel&& other) noexcept
    : fd_(std::exchange(other.fd_, -1)), previous_mask_(other.previous_mask_) {}

SignalChannel::~SignalChannel() {
  if (fd_ < 0) return;
  ReadPending();
  ::close(fd_);
  ::pthread_sigmask(SIG_SETMASK, &previous_mask_, nullptr);
}

std::vector<int> SignalChannel::ReadPending() {
  std::vector<int> out;
  signalfd_siginfo info;
  while (true) {
    ssize_t n = ::read(fd_, &info, sizeof(info));
    if (n == static_cast<ssize_t>(sizeof(info))) {
      out.push_back(static_cast<int>(info.ssi_signo));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else {
      return out;
    }
  }
}

}  // namespace hvd::launcher
