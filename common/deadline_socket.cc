#include "common/deadline_socket.h"

#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace hvd::control {
namespace {

using std::chrono::duration_cast;
using std::chrono::milliseconds;

int RemainingMs(DeadlineSocket::Clock::time_point deadline) {
  auto left = duration_cast<milliseconds>(deadline - DeadlineSocket::Clock::now()).count();
  return static_cast<int>(std::clamp<int64_t>(left, 0, 1 << 30));
}

// One non-blocking connect attempt to `ai`; returns the connected descriptor or sets `err`.
int TryConnect(const addrinfo* ai, DeadlineSocket::Clock::time_point deadline, int* err) {
  int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
  if (fd < 0) {
    *err = errno;
    return -1;
  }
  if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0 && errno != EINPROGRESS) {
    *err = errno;
    close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  int ready;
  do {
    ready = poll(&p, 1, RemainingMs(deadline));
  } while (ready < 0 && errno == EINTR);
  int so_error = 0;
  socklen_t len = sizeof(so_error);
  if (ready == 0) {
    so_error = ETIMEDOUT;
  } else if (ready < 0) {
    so_error = errno;
  } else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) {
    so_error = errno;
  }
  if (so_error != 0) {
    *err = so_error;
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

Result<DeadlineSocket> DeadlineSocket::Connect(const std::string& host, uint16_t port,
                                               Clock::time_point deadline) {
  const std::string peer = host + ":" + std::to_string(port);
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &addrs);
  if (rc != 0) return Status::IoError("cannot resolve " + peer + ": " + gai_strerror(rc));
  int last_err = 0;
  auto backoff = milliseconds(10);
  int fd = -1;
  while (fd < 0) {
    for (addrinfo* ai = addrs; ai != nullptr && fd < 0; ai = ai->ai_next) {
      fd = TryConnect(ai, deadline, &last_err);
    }
    if (fd >= 0 || Clock::now() >= deadline) break;
    if (last_err != ECONNREFUSED && last_err != ECONNRESET && last_err != EAGAIN) break;
    std::this_thread::sleep_for(
        std::min<milliseconds>(backoff, milliseconds(RemainingMs(deadline))));
    backoff = std::min(backoff * 2, milliseconds(500));
  }
  freeaddrinfo(addrs);
  if (fd >= 0) return DeadlineSocket(fd, peer);
  if (Clock::now() >= deadline || last_err == ETIMEDOUT) {
    return Status::Timeout("connecting to " + peer +
                           " timed out (last error: " + std::strerror(last_err) + ")");
  }
  return Status::IoError("connecting to " + peer + " failed: " + std::strerror(last_err));
}

DeadlineSocket::DeadlineSocket(DeadlineSocket&& other) noexcept
    : fd_(other.fd_), peer_(std::move(other.peer_)) {
  other.fd_ = -1;
}

DeadlineSocket& DeadlineSocket::operator=(DeadlineSocket&& other) noexcept {
  if (this != &other) {
    Close();
    fd_ = other.fd_;
    peer_ = std::move(other.peer_);
    other.fd_ = -1;
  }
  return *this;
}

void DeadlineSocket::Close() {
  if (fd_ >= 0) close(fd_);
  fd_ = -1;
}

void DeadlineSocket::ShutdownWrite() {
  if (fd_ >= 0) shutdown(fd_, SHUT_WR);
}

Status DeadlineSocket::PollUntil(short events, Clock::time_point deadline, const char* what) {
  pollfd p{fd_, events, 0};
  while (true) {
    int ready = poll(&p, 1, RemainingMs(deadline));
    if (ready > 0) return Status::OK();
    if (ready == 0) return Status::Timeout(std::string(what) + " " + peer_ + " timed out");
    if (errno != EINTR) {
      return Status::IoError(std::string(what) + " " + peer_ + ": " + std::strerror(errno));
    }
  }
}

Status DeadlineSocket::WriteAll(std::string_view bytes, Clock::time_point deadline) {
  if (fd_ < 0) return Status::IoError("writing to " + peer_ + ": socket is closed");
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = send(fd_, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      done += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      HVD_RETURN_IF_ERROR(PollUntil(POLLOUT, deadline, "writing to"));
      continue;
    }
    return Status::IoError("writing to " + peer_ + " failed: " + std::strerror(errno));
  }
  return Status::OK();
}

Status DeadlineSocket::ReadExact(size_t n, std::string* out, Clock::time_point deadline) {
  if (fd_ < 0) return Status::IoError("reading from " + peer_ + ": socket is closed");
  size_t start = out->size();
  out->resize(start + n);
  size_t done = 0;
  while (done < n) {
    ssize_t got = recv(fd_, out->data() + start + done, n - done, MSG_DONTWAIT);
    if (got > 0) {
      done += static_cast<size_t>(got);
      continue;
    }
    if (got == 0) {
      out->resize(start + done);
      return Status::IoError("connection closed by " + peer_ + " after " + std::to_string(done) +
                             " of " + std::to_string(n) + " bytes");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      Status s = PollUntil(POLLIN, deadline, "reading from");
      if (!s.ok()) {
        out->resize(start + done);
        return s;
      }
      continue;
    }
    int err = errno;
    out->resize(start + done);
    return Status::IoError("reading from " + peer_ + " failed: " + std::strerror(err));
  }
  return Status::OK();
}

}  // namespace hvd::control
