#ifndef HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SERVER_CONNECTION_H_
#define HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SERVER_CONNECTION_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

// After a standard header on purpose: Asio decides between aligned_alloc and operator new from
// a libstdc++ macro, and a TU that includes Asio first makes a different (ODR-violating)
// choice, which ASan reports as alloc-dealloc-mismatch.
#include <asio.hpp>

#include "common/frame.h"
#include "common/kv_messages.h"
#include "common/kv_store.h"
#include "launcher/rendezvous/rendezvous_server.h"

// Internal to RendezvousServer: one accepted connection's protocol state machine.
namespace hvd::launcher::internal {

struct RendezvousCounters {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> rejected_auth{0};
  std::atomic<uint64_t> rejected_replay{0};
  std::atomic<uint64_t> rejected_oversize{0};
  std::atomic<uint64_t> rejected_malformed{0};
  std::atomic<uint64_t> handshake_timeouts{0};
};

// What every connection shares with the server; outlives all connections.
struct ConnectionContext {
  const RendezvousServerOptions* options;
  control::MacKey hello_key;
  control::KvStore* store;
  RendezvousCounters* counters;
  std::string server_name;                    // "address:port", for log lines
  std::function<void(uint64_t id)> on_close;  // runs on the I/O thread
  // RendezvousServer::AbortPrefix's (prefix, reason) pairs; read and written on the I/O thread.
  const std::vector<std::pair<std::string, std::string>>* aborted_prefixes = nullptr;
};

// Speaks the server side of common/frame.h on one socket: hello -> server hello -> auth ->
// auth-ok, then one request at a time, each answered before the next is read (a pending wait
// parks the connection until the key appears or its timeout fires). Every method runs on the
// server's single I/O thread, so no member needs a lock; the only cross-thread entry is the
// KvStore wait callback, which just posts to that thread.
class RendezvousConnection : public std::enable_shared_from_this<RendezvousConnection> {
 public:
  RendezvousConnection(asio::ip::tcp::socket socket, uint64_t id, const ConnectionContext* context);

  void Start();
  // Server shutdown: a pending wait is answered kAborted (best effort), then the socket closes.
  void Shutdown();
  // RendezvousServer::AbortPrefix: a pending wait on a key under `prefix` is answered
  // kAborted(`reason`).
  void AbortWait(const std::string& prefix, const std::string& reason);

 private:
  enum class State { kHello, kAuth, kReady, kClosed };

  void ReadHeader();
  void ReadBody(const control::FrameHeader& header);
  void OnFrame();
  void OnHello(const control::Frame& frame);
  void OnAuth();
  void OnRequest();
  void HandleRequest(const control::KvRequest& request);
  void StartWait(const control::KvRequest& request);
  void FinishWait(std::optional<std::string> value);
  void Respond(control::KvResponse response);
  void Send(std::string bytes);
  void WriteNext();
  // Counts and logs the rejection, sends kReject during the handshake, closes.
  void Reject(control::FrameFault fault, const std::string& detail);
  void RejectHandshakeTimeout();
  void Close();
  // Runs `fn`, turning any escaping exception into a logged close.
  template <typename Fn>
  void Guarded(const char* where, Fn&& fn);

  asio::ip::tcp::socket socket_;
  asio::steady_timer frame_timer_;  // handshake deadline, then per-frame body deadline
  asio::steady_timer wait_timer_;
  const uint64_t id_;
  const ConnectionContext* const context_;
  std::string peer_;
  State state_ = State::kHello;
  std::string buffer_;         // the frame being read
  bool body_pending_ = false;  // a post-handshake frame body is being read
  std::string job_id_;
  std::optional<control::FrameChannel> channel_;
  std::deque<std::string> write_queue_;
  bool waiting_ = false;
  uint64_t waiter_id_ = 0;
  std::string wait_key_;
  uint64_t wait_timeout_ms_ = 0;
};

}  // namespace hvd::launcher::internal

#endif  // HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SERVER_CONNECTION_H_
