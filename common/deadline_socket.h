#ifndef HVD_COMMON_DEADLINE_SOCKET_H_
#define HVD_COMMON_DEADLINE_SOCKET_H_

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/status.h"

namespace hvd::control {

// A blocking TCP client socket in which every operation takes an absolute deadline
// (non-blocking descriptor + poll()). TCP_NODELAY and close-on-exec are set; writes never
// raise SIGPIPE. Errors are Status values naming "host:port": kTimeout when the deadline
// passes, kIoError for refused, reset or closed connections. Move-only; one thread at a time.
class DeadlineSocket {
 public:
  using Clock = std::chrono::steady_clock;

  // Resolves `host` and connects, retrying refused connections with backoff until `deadline`
  // (the server may still be coming up).
  static Result<DeadlineSocket> Connect(const std::string& host, uint16_t port,
                                        Clock::time_point deadline);

  DeadlineSocket() = default;
  DeadlineSocket(DeadlineSocket&& other) noexcept;
  DeadlineSocket& operator=(DeadlineSocket&& other) noexcept;
  DeadlineSocket(const DeadlineSocket&) = delete;
  DeadlineSocket& operator=(const DeadlineSocket&) = delete;
  ~DeadlineSocket() { Close(); }

  Status WriteAll(std::string_view bytes, Clock::time_point deadline);
  // Appends exactly `n` bytes to `out`. A peer close before then is kIoError.
  Status ReadExact(size_t n, std::string* out, Clock::time_point deadline);
  // Half-closes the sending side (the peer reads EOF).
  void ShutdownWrite();
  void Close();

  bool is_open() const { return fd_ >= 0; }
  const std::string& peer() const { return peer_; }

 private:
  DeadlineSocket(int fd, std::string peer) : fd_(fd), peer_(std::move(peer)) {}
  // Waits for `events` on the descriptor; kTimeout names `what` when the deadline passes.
  Status PollUntil(short events, Clock::time_point deadline, const char* what);

  int fd_ = -1;
  std::string peer_;
};

}  // namespace hvd::control

#endif  // HVD_COMMON_DEADLINE_SOCKET_H_
