#ifndef HVD_LAUNCHER_LOCAL_SIGNAL_CHANNEL_H_
#define HVD_LAUNCHER_LOCAL_SIGNAL_CHANNEL_H_

#include <signal.h>

#include <vector>

#include "common/status.h"

namespace hvd::launcher {

// Delivers SIGINT, SIGTERM, SIGHUP, SIGQUIT (a request for the ranks' stacks, Ctrl-\ at the
// terminal) and SIGCHLD to hvdrun's event loop as readable events on a signalfd, so no work
// happens in a signal handler. SIGPIPE is blocked and collected too, so a write to a closed
// pipe fails with EPIPE (and is handled there) instead of killing hvdrun before it can stop
// the ranks.
//
// Contract: Open() blocks those signals in the calling thread; threads created afterwards
// inherit the mask, so it must run before any other thread starts (the rendezvous server)
// or one of them could take the default action for SIGINT. The destructor drains what is
// pending and restores the previous mask. Children must clear the mask before exec
// (LocalSpawner does). Used from one thread.
class SignalChannel {
 public:
  static Result<SignalChannel> Open();
  SignalChannel(SignalChannel&& other) noexcept;
  SignalChannel& operator=(SignalChannel&&) = delete;
  SignalChannel(const SignalChannel&) = delete;
  ~SignalChannel();

  // Non-blocking, close-on-exec; poll it for POLLIN.
  int fd() const { return fd_; }
  // Every signal number received since the last call (SIGCHLDs may be coalesced).
  std::vector<int> ReadPending();

 private:
  SignalChannel(int fd, const sigset_t& previous) : fd_(fd), previous_mask_(previous) {}

  int fd_ = -1;
  sigset_t previous_mask_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_SIGNAL_CHANNEL_H_
