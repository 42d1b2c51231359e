#include "launcher/rendezvous/rendezvous_server_connection.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <exception>

#include "common/logging.h"

namespace hvd::launcher::internal {
namespace {

using control::FrameCheck;
using control::FrameFault;
using control::KvRequest;

// Longest wait a client may ask for; keeps timer arithmetic far from overflow.
constexpr uint64_t kMaxWaitMs = 7ull * 24 * 3600 * 1000;

std::string PeerName(const asio::ip::tcp::socket& socket) {
  asio::error_code ec;
  auto endpoint = socket.remote_endpoint(ec);
  if (ec) return "unknown peer";
  return endpoint.address().to_string() + ":" + std::to_string(endpoint.port());
}

// Best-effort, never-blocking send of a small frame right before closing.
void SendNow(asio::ip::tcp::socket& socket, const std::string& bytes) {
  ::send(socket.native_handle(), bytes.data(), bytes.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
}

}  // namespace

template <typename Fn>
void RendezvousConnection::Guarded(const char* where, Fn&& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    HVD_LOG_ERROR("rendezvous server {}: closing connection from {} after an error in {}: {}",
                  context_->server_name, peer_, where, e.what());
    Close();
  } catch (...) {
    HVD_LOG_ERROR("rendezvous server {}: closing connection from {} after an error in {}",
                  context_->server_name, peer_, where);
    Close();
  }
}

RendezvousConnection::RendezvousConnection(asio::ip::tcp::socket socket, uint64_t id,
                                           const ConnectionContext* context)
    : socket_(std::move(socket)),
      frame_timer_(socket_.get_executor()),
      wait_timer_(socket_.get_executor()),
      id_(id),
      context_(context),
      peer_(PeerName(socket_)),
      session_(context, id) {}

void RendezvousConnection::Start() {
  asio::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  // Workers forked later must not hold this connection open after the server closes it.
  ::fcntl(socket_.native_handle(), F_SETFD, FD_CLOEXEC);
  frame_timer_.expires_after(context_->options->handshake_timeout);
  frame_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    self->Guarded("frame timer", [&] {
      if (self->session_.state() == State::kClosed) return;
      if (self->session_.state() != State::kReady) return self->RejectHandshakeTimeout();
    });
  });
  ReadHeader();
}

void RendezvousConnection::ReadHeader() {
  if (session_.state() == State::kClosed) return;
  buffer_.assign(control::kFrameHeaderBytes, '\0');
  asio::async_read(socket_, asio::buffer(buffer_.data(), buffer_.size()),
                   [self = shared_from_this()](const asio::error_code& ec, size_t n) {
                     self->Guarded("header read", [&] {
                       if (self->session_.state() == State::kClosed) return;
                       if (ec && n > 0) {
                         return self->Reject(
                             FrameFault::kTruncated,
                             "connection ended after " + std::to_string(n) + " of " +
                                 std::to_string(control::kFrameHeaderBytes) + " header bytes");
                       }
                       if (ec) {
                         HVD_LOG_DEBUG("rendezvous server {}: {} closed the connection ({})",
                                       self->context_->server_name, self->peer_, ec.message());
                         return self->Close();
                       }
                       uint32_t max_body = self->session_.state() == State::kReady
                                               ? self->context_->options->max_frame_bytes
                                               : control::kMaxHandshakeBodyBytes;
                       control::FrameHeader header;
                       FrameCheck check = control::DecodeHeader(self->buffer_, max_body, &header);
                       if (!check.ok()) return self->Reject(check.fault, check.detail);
                       self->ReadBody(header);
                     });
                   });
}

void RendezvousConnection::ReadBody(const control::FrameHeader& header) {
  body_bytes_ = header.body_length + control::kFrameTagBytes;
  buffer_.resize(control::kFrameHeaderBytes);
  if (session_.state() == State::kReady) {
    // After the handshake a client may idle between frames, but not stall inside one: the body
    // must come within the handshake timeout plus 1 ms per 64 bytes (at least 64 KB/s, half a
    // Mbit/s: a 16 MiB body over a slow link, not in 5 s as until 2026-12-02).
    body_pending_ = true;
    frame_timer_.expires_after(context_->options->handshake_timeout +
                               std::chrono::milliseconds(body_bytes_ / 64));
    frame_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      self->Guarded("frame timer", [&] {
        if (self->session_.state() != State::kReady || !self->body_pending_) return;
        self->Reject(FrameFault::kTruncated,
                     "frame body did not arrive in time (slower than "
                     "64 KB/s after the handshake timeout)");
      });
    });
  }
  ReadBodyPiece();
}

void RendezvousConnection::ReadBodyPiece() {
  // Piece by piece, so that what a sender announces is not what it holds: a key holder sending
  // a 16 MiB body slowly kept a 16 MiB buffer for the whole deadline (until 2026-12-02).
  constexpr size_t kBodyPieceBytes = size_t{64} << 10;
  const size_t have = buffer_.size() - control::kFrameHeaderBytes;
  const size_t piece = std::min(kBodyPieceBytes, body_bytes_ - have);
  buffer_.resize(buffer_.size() + piece);
  asio::async_read(socket_, asio::buffer(buffer_.data() + control::kFrameHeaderBytes + have, piece),
                   [self = shared_from_this(), have, piece](const asio::error_code& ec, size_t n) {
                     self->Guarded("body read", [&] {
                       if (self->session_.state() == State::kClosed) return;
                       const bool done = ec || have + piece == self->body_bytes_;
                       if (done && self->session_.state() == State::kReady) {
                         self->body_pending_ = false;
                         self->frame_timer_.cancel();
                       }
                       if (ec) {
                         return self->Reject(FrameFault::kTruncated,
                                             "connection ended after " + std::to_string(have + n) +
                                                 " of " + std::to_string(self->body_bytes_) +
                                                 " body and tag bytes");
                       }
                       if (!done) return self->ReadBodyPiece();
                       self->OnFrame();
                     });
                   });
}

void RendezvousConnection::OnFrame() {
  const State before = session_.state();
  RendezvousSession::Step step = session_.OnFrame(buffer_);
  if (!step.ok()) return Reject(step.fault, step.detail);
  if (before == State::kAuth && session_.state() == State::kReady) {
    frame_timer_.cancel();
    HVD_LOG_DEBUG("rendezvous server {}: {} authenticated for job '{}'", context_->server_name,
                  peer_, session_.job_id());
  }
  if (!step.reply.empty()) Send(std::move(step.reply));
  if (step.wait) return StartWait(*step.wait);
  ReadHeader();
}

void RendezvousConnection::StartWait(const KvRequest& request) {
  std::weak_ptr<RendezvousConnection> weak = shared_from_this();
  auto executor = socket_.get_executor();
  // Runs on whichever thread set the key; only hops to the I/O thread.
  auto on_set = [weak, executor](const std::string& value) {
    asio::post(executor, [weak, value] {
      if (auto self = weak.lock()) self->Guarded("wait", [&] { self->FinishWait(value); });
    });
  };
  uint64_t waiter = 0;
  std::optional<std::string> value =
      context_->store->GetOrWait(session_.job_id(), request.key, std::move(on_set), &waiter);
  wait_key_ = request.key;
  wait_timeout_ms_ = std::min(request.timeout_ms, kMaxWaitMs);
  waiting_ = true;
  if (value) return FinishWait(std::move(value));
  waiter_id_ = waiter;
  WatchWhileWaiting();
  wait_timer_.expires_after(std::chrono::milliseconds(wait_timeout_ms_));
  wait_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    self->Guarded("wait timer", [&] {
      // When CancelWait loses the race, the set's posted FinishWait answers instead.
      if (self->waiting_ && self->context_->store->CancelWait(self->waiter_id_)) {
        self->FinishWait(std::nullopt);
      }
    });
  });
}

// A client that goes away while its wait is parked (a worker killed in an elastic reset) is
// noticed at once: its connection closes and its wait is cancelled. Until 2026-12-01 nothing
// read the socket meanwhile, and it was held until the wait timed out (11 minutes for an
// elastic worker's, 7 days at most). A client sends nothing while it waits; bytes that arrive
// anyway are read after the answer, as its next frame.
void RendezvousConnection::WatchWhileWaiting() {
  if (watching_) return;
  watching_ = true;
  socket_.async_wait(
      asio::ip::tcp::socket::wait_read, [self = shared_from_this()](const asio::error_code& ec) {
        self->watching_ = false;
        if (ec == asio::error::operation_aborted || !self->waiting_ ||
            self->session_.state() == State::kClosed) {
          return;
        }
        self->Guarded("wait watch", [&] {
          if (ec) return self->Close();
          char byte = 0;
          asio::error_code peek;
          const size_t n =
              self->socket_.receive(asio::buffer(&byte, 1), asio::socket_base::message_peek, peek);
          if (peek == asio::error::would_block || peek == asio::error::try_again) {
            return self->WatchWhileWaiting();
          }
          if (peek || n == 0) {
            HVD_LOG_DEBUG("rendezvous server {}: {} went away during its wait for '{}'",
                          self->context_->server_name, self->peer_, self->wait_key_);
            self->Close();
          }
        });
      });
}

void RendezvousConnection::FinishWait(std::optional<std::string> value) {
  if (!waiting_ || session_.state() != State::kReady) return;
  waiting_ = false;
  wait_timer_.cancel();
  Send(session_.WaitAnswer(wait_key_, std::move(value), wait_timeout_ms_));
  ReadHeader();
}

void RendezvousConnection::Send(std::string bytes) {
  write_queue_.push_back(std::move(bytes));
  if (write_queue_.size() == 1) WriteNext();
}

void RendezvousConnection::WriteNext() {
  asio::async_write(socket_, asio::buffer(write_queue_.front()),
                    [self = shared_from_this()](const asio::error_code& ec, size_t) {
                      self->Guarded("write", [&] {
                        if (self->session_.state() == State::kClosed) return;
                        if (ec) {
                          HVD_LOG_DEBUG("rendezvous server {}: writing to {} failed: {}",
                                        self->context_->server_name, self->peer_, ec.message());
                          return self->Close();
                        }
                        self->write_queue_.pop_front();
                        if (!self->write_queue_.empty()) self->WriteNext();
                      });
                    });
}

void RendezvousConnection::Reject(FrameFault fault, const std::string& detail) {
  if (session_.state() == State::kClosed) return;
  RendezvousCounters& c = *context_->counters;
  switch (fault) {
    case FrameFault::kBadTag:
      c.rejected_auth.fetch_add(1);
      break;
    case FrameFault::kOutOfSequence:
      c.rejected_replay.fetch_add(1);
      break;
    case FrameFault::kOversize:
      c.rejected_oversize.fetch_add(1);
      break;
    default:
      c.rejected_malformed.fetch_add(1);
      break;
  }
  WarnRejected(fmt::format("{}: {}", control::FrameFaultName(fault), detail));
  // Only a client that got the framing right but not the key hears why (see frame.h).
  if (fault == FrameFault::kBadTag && session_.state() == State::kHello) {
    SendNow(socket_, control::EncodeReject(detail));
  }
  Close();
}

void RendezvousConnection::RejectHandshakeTimeout() {
  context_->counters->handshake_timeouts.fetch_add(1);
  WarnRejected(fmt::format("no complete handshake within {} ms",
                           context_->options->handshake_timeout.count()));
  Close();
}

void RendezvousConnection::WarnRejected(const std::string& why) {
  uint64_t unlogged = 0;
  if (context_->rejections != nullptr &&
      !context_->rejections->Allow(std::chrono::steady_clock::now(), &unlogged)) {
    return;
  }
  HVD_LOG_WARNING("rendezvous server {}: rejected connection from {}: {}{}", context_->server_name,
                  peer_, why,
                  unlogged == 0 ? std::string()
                                : fmt::format(" ({} more refused since the last such warning, "
                                              "not shown: at most one every {} s)",
                                              unlogged, RejectionLog::kInterval.count()));
}

void RendezvousConnection::Shutdown() {
  if (session_.state() == State::kClosed) return;
  if (waiting_ && context_->store->CancelWait(waiter_id_)) {
    SendNow(socket_,
            session_.Seal({StatusCode::kAborted, "rendezvous server is shutting down", "", 0}));
  }
  waiting_ = false;
  Close();
}

void RendezvousConnection::AbortWait(const std::string& prefix, const std::string& reason) {
  if (session_.state() != State::kReady || !waiting_ || !wait_key_.starts_with(prefix)) return;
  // When CancelWait loses the race, the set's posted FinishWait answers instead.
  if (!context_->store->CancelWait(waiter_id_)) return;
  waiting_ = false;
  wait_timer_.cancel();
  Send(session_.Seal({StatusCode::kAborted, reason + " (key '" + wait_key_ + "')", "", 0}));
  ReadHeader();
}

void RendezvousConnection::Close() {
  if (session_.state() == State::kClosed) return;
  session_.Close();
  if (waiting_) context_->store->CancelWait(waiter_id_);
  waiting_ = false;
  asio::error_code ec;
  frame_timer_.cancel();
  wait_timer_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
  socket_.close(ec);
  context_->on_close(id_);
}

}  // namespace hvd::launcher::internal
