#ifndef HVD_TEST_UNIT_LAUNCHER_RENDEZVOUS_RENDEZVOUS_TEST_UTIL_H_
#define HVD_TEST_UNIT_LAUNCHER_RENDEZVOUS_RENDEZVOUS_TEST_UTIL_H_

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/deadline_socket.h"
#include "common/frame.h"
#include "common/kv_messages.h"

// Helpers for driving the rendezvous server with hand-made bytes.
namespace hvd::launcher::testing {

using Clock = std::chrono::steady_clock;

inline Clock::time_point In(std::chrono::milliseconds ms) { return Clock::now() + ms; }

// A client that speaks the protocol by hand (frame.h functions over a DeadlineSocket), so
// tests can send exactly the bytes they want after a genuine handshake.
class RawSession {
 public:
  // Connects and, unless `handshake` is false, completes the handshake.
  static RawSession Open(uint16_t port, const control::JobKey& key, const std::string& job_id,
                         bool handshake = true);

  control::DeadlineSocket& socket() { return socket_; }
  control::FrameChannel& channel() { return *channel_; }

  // Sends a request sealed by this session and reads the decoded response.
  Result<control::KvResponse> Call(const control::KvRequest& request);
  // Reads until the server closes the connection; true when it did so before `deadline`.
  // Frames arriving first (a kReject, say) are appended to `received` when given.
  bool ServerClosed(Clock::time_point deadline, std::string* received = nullptr);

 private:
  control::DeadlineSocket socket_;
  std::optional<control::FrameChannel> channel_;
};

// A TCP proxy for one connection that records every byte the client sends upstream and can
// inject extra bytes into the upstream stream (to replay captured frames in place).
class RecordingProxy {
 public:
  explicit RecordingProxy(uint16_t upstream_port);
  ~RecordingProxy();

  uint16_t port() const { return port_; }
  std::string client_bytes();
  void Inject(std::string bytes);
  // True once the upstream (server) side closed, before `deadline`.
  bool WaitUpstreamClosed(Clock::time_point deadline);

 private:
  void Run();
  void Wake();

  uint16_t upstream_port_;
  uint16_t port_ = 0;
  int listen_fd_ = -1;
  int wake_[2] = {-1, -1};
  std::mutex mu_;
  std::condition_variable cv_;
  std::string recorded_;             // guarded by mu_
  std::vector<std::string> inject_;  // guarded by mu_
  bool stop_ = false;                // guarded by mu_
  bool upstream_closed_ = false;     // guarded by mu_
  std::thread thread_;
};

// Splits a byte stream into whole frames using each header's length.
std::vector<std::string> SplitFrames(const std::string& stream);

}  // namespace hvd::launcher::testing

#endif  // HVD_TEST_UNIT_LAUNCHER_RENDEZVOUS_RENDEZVOUS_TEST_UTIL_H_
