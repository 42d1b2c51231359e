#ifndef HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SESSION_H_
#define HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SESSION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/frame.h"
#include "common/kv_messages.h"
#include "common/kv_store.h"
#include "common/rejection_log.h"
#include "launcher/rendezvous/rendezvous_server.h"

// Internal to RendezvousServer: the protocol of one accepted connection, without its socket.
namespace hvd::launcher::internal {

struct RendezvousCounters {
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> rejected_auth{0};
  std::atomic<uint64_t> rejected_replay{0};
  std::atomic<uint64_t> rejected_oversize{0};
  std::atomic<uint64_t> rejected_malformed{0};
  std::atomic<uint64_t> handshake_timeouts{0};
  std::atomic<uint64_t> accept_failures{0};
  std::atomic<uint64_t> rejected_busy{0};
};

// The I/O thread's (common/rejection_log.h).
using RejectionLog = hvd::RejectionLog;

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
  RejectionLog* rejections = nullptr;  // null: every refusal logged
};

// The server side of common/frame.h for one connection, as a pure state machine over whole
// frames: hello -> server hello -> auth -> auth-ok, then requests executed against the
// context's store, each answered by one response. RendezvousConnection reads a header, asks
// max_body(), reads the rest and hands the frame to OnFrame; the fuzz target
// rendezvous_connection drives the same calls from a byte buffer. A fault is final: the
// caller rejects and closes. Not synchronized (the server's I/O thread owns it).
class RendezvousSession {
 public:
  enum class State { kHello, kAuth, kReady, kClosed };

  // What one frame made the connection do.
  struct Step {
    control::FrameFault fault = control::FrameFault::kNone;  // else reject and close
    std::string detail;
    std::string reply;                       // bytes to send; may be empty
    std::optional<control::KvRequest> wait;  // a kWait to park; answer it with WaitAnswer
    bool ok() const { return fault == control::FrameFault::kNone; }
  };

  // `new_nonce` makes the server nonce of the handshake (control::NewNonce in production).
  RendezvousSession(const ConnectionContext* context, uint64_t id,
                    std::function<control::Nonce()> new_nonce = control::NewNonce);

  State state() const { return state_; }
  const std::string& job_id() const { return job_id_; }
  void Close() { state_ = State::kClosed; }
  // The body limit the next frame's header is checked against (DecodeHeader).
  uint32_t max_body() const;
  // `frame` is a whole frame whose header passed DecodeHeader(max_body()).
  Step OnFrame(std::string_view frame);
  // The response to a parked wait: the value, or a timeout after `timeout_ms` when none.
  std::string WaitAnswer(const std::string& key, std::optional<std::string> value,
                         uint64_t timeout_ms);
  // A sealed response; only once the session is kReady.
  std::string Seal(const control::KvResponse& response);

 private:
  Step OnHello(std::string_view bytes);
  Step OnAuth(std::string_view bytes);
  Step OnRequest(std::string_view bytes);
  Step Execute(const control::KvRequest& request);

  const ConnectionContext* const context_;
  const uint64_t id_;
  std::function<control::Nonce()> new_nonce_;
  State state_ = State::kHello;
  std::string job_id_;
  std::optional<control::FrameChannel> channel_;
};

}  // namespace hvd::launcher::internal

#endif  // HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SESSION_H_
