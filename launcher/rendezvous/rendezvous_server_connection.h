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

#include "launcher/rendezvous/rendezvous_session.h"

// Internal to RendezvousServer: one accepted connection's protocol state machine.
namespace hvd::launcher::internal {

// Speaks the server side of common/frame.h on one socket (the protocol itself is
// RendezvousSession's): one frame at a time, each answered before the next is read (a pending
// wait parks the connection until the key appears or its timeout fires). Every method runs on the
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
  // Past the handshake (or closed): no longer counted against the server's limit of
  // connections in their handshake.
  bool authenticated() const {
    return session_.state() != State::kHello && session_.state() != State::kAuth;
  }

 private:
  using State = RendezvousSession::State;

  void ReadHeader();
  void ReadBody(const control::FrameHeader& header);
  // The next piece of the body (at most kBodyPieceBytes): the buffer grows with what arrived.
  void ReadBodyPiece();
  void OnFrame();
  void StartWait(const control::KvRequest& request);
  void FinishWait(std::optional<std::string> value);
  void Send(std::string bytes);
  void WriteNext();
  // Counts and logs the rejection, sends kReject during the handshake, closes.
  void Reject(control::FrameFault fault, const std::string& detail);
  void RejectHandshakeTimeout();
  void WarnRejected(const std::string& why);  // bounded by the context's RejectionLog
  void WatchWhileWaiting();                   // closes when the client goes away mid-wait
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
  RendezvousSession session_;
  std::string buffer_;         // the frame being read
  size_t body_bytes_ = 0;      // the body and tag the header announced
  bool body_pending_ = false;  // a post-handshake frame body is being read
  std::deque<std::string> write_queue_;
  bool waiting_ = false;
  bool watching_ = false;  // a WatchWhileWaiting is pending
  uint64_t waiter_id_ = 0;
  std::string wait_key_;
  uint64_t wait_timeout_ms_ = 0;
};

}  // namespace hvd::launcher::internal

#endif  // HVD_LAUNCHER_RENDEZVOUS_RENDEZVOUS_SERVER_CONNECTION_H_
