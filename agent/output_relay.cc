#include "agent/output_relay.h"

#include <errno.h>
#include <unistd.h>

#include <utility>

namespace hvd::agent {

OutputRelay::OutputRelay(OutputRelay&& other) noexcept
    : in_fd_(std::exchange(other.in_fd_, -1)),
      out_fd_(other.out_fd_),
      out_broken_(other.out_broken_),
      pending_(std::move(other.pending_)) {}

OutputRelay& OutputRelay::operator=(OutputRelay&& other) noexcept {
  if (this != &other) {
    CloseInput();
    in_fd_ = std::exchange(other.in_fd_, -1);
    out_fd_ = other.out_fd_;
    out_broken_ = other.out_broken_;
    pending_ = std::move(other.pending_);
  }
  return *this;
}

void OutputRelay::PreparePoll(pollfd* entry) const {
  entry->fd = -1;
  entry->events = 0;
  entry->revents = 0;
  if (!pending_.empty()) {
    entry->fd = out_fd_;
    entry->events = POLLOUT;
  } else if (in_fd_ >= 0) {
    entry->fd = in_fd_;
    entry->events = POLLIN;
  }
}

void OutputRelay::Pump() {
  for (;;) {
    if (!pending_.empty()) {
      ssize_t n = ::write(out_fd_, pending_.data(), pending_.size());
      if (n > 0) {
        pending_.erase(0, static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
      out_broken_ = true;  // the channel is gone; keep draining the rank's pipe
      pending_.clear();
    }
    if (in_fd_ < 0) return;
    char buffer[65536];
    ssize_t n = ::read(in_fd_, buffer, sizeof(buffer));
    if (n > 0) {
      if (!out_broken_) pending_.assign(buffer, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return;
    CloseInput();  // EOF or a read error
    return;
  }
}

void OutputRelay::CloseInput() {
  if (in_fd_ >= 0) ::close(in_fd_);
  in_fd_ = -1;
}

}  // namespace hvd::agent
