#ifndef HVD_COMMON_TCP_KV_CLIENT_H_
#define HVD_COMMON_TCP_KV_CLIENT_H_

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "common/deadline_socket.h"
#include "common/frame.h"
#include "common/kv_client.h"
#include "common/kv_messages.h"

namespace hvd::control {

// KvClient over one TCP connection speaking the protocol of common/frame.h: one request in
// flight at a time (the mutex serializes callers), each answered by exactly one response.
// Ordinary calls use the connect timeout as their deadline; Wait uses its own timeout plus
// that margin, and the server, not the client, decides when the key appeared. After a
// transport failure the connection is broken for good: later calls fail fast with the same
// error (callers reconnect by calling Connect again). Errors name the op, key and host:port.
class TcpKvClient final : public KvClient {
 public:
  static Result<std::unique_ptr<TcpKvClient>> Connect(
      const std::string& host, uint16_t port, const JobKey& key, const std::string& job_id,
      std::chrono::milliseconds timeout, uint32_t max_frame_bytes = kDefaultMaxFrameBytes);

  Status Set(const std::string& key, const std::string& value) override;
  Result<std::string> Get(const std::string& key) override;
  Result<std::string> Wait(const std::string& key, std::chrono::milliseconds timeout) override;
  Result<int64_t> Add(const std::string& key, int64_t delta) override;
  Status FinishScope(const std::string& prefix, int expected) override;
  Status Delete(const std::string& key) override;

 private:
  TcpKvClient(DeadlineSocket socket, FrameChannel channel, std::chrono::milliseconds io_timeout);

  // Sends `request` and reads its response; a non-OK response code becomes a Status with that
  // code. Everything is prefixed with "kv <op> '<key>' at host:port".
  Result<KvResponse> Call(const KvRequest& request, std::chrono::milliseconds extra_time);
  Result<KvResponse> CallLocked(const KvRequest& request,
                                DeadlineSocket::Clock::time_point deadline);

  std::mutex mu_;
  DeadlineSocket socket_;  // guarded by mu_
  FrameChannel channel_;   // guarded by mu_
  Status broken_;          // guarded by mu_; the first transport error, OK while healthy
  const std::chrono::milliseconds io_timeout_;
};

// Reads one whole frame (header, body, tag) whose body is at most `max_body` bytes; used by the
// client and by tests that speak the protocol by hand. The header is validated before the body
// is read, so an oversized announcement is refused without reading it.
Status ReadFrameBytes(DeadlineSocket& socket, uint32_t max_body,
                      DeadlineSocket::Clock::time_point deadline, std::string* frame);

}  // namespace hvd::control

#endif  // HVD_COMMON_TCP_KV_CLIENT_H_
