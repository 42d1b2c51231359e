#include "launcher/output/stdin_pump.h"

#include <errno.h>
#include <unistd.h>

namespace hvd::launcher {
namespace {
constexpr size_t kChunk = 64 * 1024;
}  // namespace

std::optional<pollfd> StdinPump::Interest() const {
  if (sink_fd_ < 0) return std::nullopt;
  if (offset_ < buffer_.size()) return pollfd{sink_fd_, POLLOUT, 0};
  return pollfd{source_fd_, POLLIN, 0};
}

void StdinPump::OnReady() {
  if (sink_fd_ < 0) return;
  if (offset_ < buffer_.size()) {
    WriteSink();
  } else {
    ReadSource();
  }
}

void StdinPump::ReadSource() {
  buffer_.resize(kChunk);
  ssize_t n = ::read(source_fd_, buffer_.data(), buffer_.size());
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
    buffer_.clear();
    return;
  }
  if (n <= 0) {  // end of input, or an unreadable stdin: rank 0 sees end of file
    Close();
    return;
  }
  buffer_.resize(static_cast<size_t>(n));
  offset_ = 0;
  WriteSink();
}

void StdinPump::WriteSink() {
  ssize_t n = ::write(sink_fd_, buffer_.data() + offset_, buffer_.size() - offset_);
  if (n > 0) {
    offset_ += static_cast<size_t>(n);
  } else if (n < 0 && errno != EINTR && errno != EAGAIN) {
    Close();  // rank 0 closed its stdin
  }
}

void StdinPump::Close() {
  if (sink_fd_ >= 0) ::close(sink_fd_);
  sink_fd_ = -1;
  buffer_.clear();
  offset_ = 0;
}

}  // namespace hvd::launcher
