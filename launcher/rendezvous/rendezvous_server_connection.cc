#include "launcher/rendezvous/rendezvous_server_connection.h"

#include <fcntl.h>
#include <sys/socket.h>

#include <algorithm>
#include <exception>

#include "common/logging.h"

namespace hvd::launcher::internal {
namespace {

using control::Frame;
using control::FrameCheck;
using control::FrameFault;
using control::FrameType;
using control::KvRequest;
using control::KvResponse;

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
      peer_(PeerName(socket_)) {}

void RendezvousConnection::Start() {
  asio::error_code ec;
  socket_.set_option(asio::ip::tcp::no_delay(true), ec);
  // Workers forked later must not hold this connection open after the server closes it.
  ::fcntl(socket_.native_handle(), F_SETFD, FD_CLOEXEC);
  frame_timer_.expires_after(context_->options->handshake_timeout);
  frame_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
    if (ec == asio::error::operation_aborted) return;
    self->Guarded("frame timer", [&] {
      if (self->state_ == State::kClosed) return;
      if (self->state_ != State::kReady) return self->RejectHandshakeTimeout();
    });
  });
  ReadHeader();
}

void RendezvousConnection::ReadHeader() {
  if (state_ == State::kClosed) return;
  buffer_.assign(control::kFrameHeaderBytes, '\0');
  asio::async_read(socket_, asio::buffer(buffer_.data(), buffer_.size()),
                   [self = shared_from_this()](const asio::error_code& ec, size_t n) {
                     self->Guarded("header read", [&] {
                       if (self->state_ == State::kClosed) return;
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
                       uint32_t max_body = self->state_ == State::kReady
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
  size_t rest = header.body_length + control::kFrameTagBytes;
  buffer_.resize(control::kFrameHeaderBytes + rest);
  if (state_ == State::kReady) {
    // After the handshake a client may idle between frames, but not stall inside one.
    body_pending_ = true;
    frame_timer_.expires_after(context_->options->handshake_timeout);
    frame_timer_.async_wait([self = shared_from_this()](const asio::error_code& ec) {
      if (ec == asio::error::operation_aborted) return;
      self->Guarded("frame timer", [&] {
        if (self->state_ != State::kReady || !self->body_pending_) return;
        self->Reject(FrameFault::kTruncated, "frame body did not arrive in time");
      });
    });
  }
  asio::async_read(socket_, asio::buffer(buffer_.data() + control::kFrameHeaderBytes, rest),
                   [self = shared_from_this(), rest](const asio::error_code& ec, size_t n) {
                     self->Guarded("body read", [&] {
                       if (self->state_ == State::kClosed) return;
                       if (self->state_ == State::kReady) {
                         self->body_pending_ = false;
                         self->frame_timer_.cancel();
                       }
                       if (ec) {
                         return self->Reject(FrameFault::kTruncated,
                                             "connection ended after " + std::to_string(n) +
                                                 " of " + std::to_string(rest) +
                                                 " body and tag bytes");
                       }
                       self->OnFrame();
                     });
                   });
}

void RendezvousConnection::OnFrame() {
  switch (state_) {
    case State::kHello: {
      Frame frame;
      FrameCheck check = control::ParseFrame(buffer_, control::kMaxHandshakeBodyBytes, &frame);
      if (!check.ok()) return Reject(check.fault, check.detail);
      return OnHello(frame);
    }
    case State::kAuth:
      return OnAuth();
    case State::kReady:
      return OnRequest();
    case State::kClosed:
      return;
  }
}

void RendezvousConnection::OnHello(const Frame& frame) {
  if (frame.header.type != FrameType::kHello || frame.header.sequence != 0) {
    return Reject(FrameFault::kMalformed,
                  std::string("expected hello, got ") + control::FrameTypeName(frame.header.type));
  }
  if (!control::FrameTagValid(context_->hello_key, buffer_)) {
    return Reject(FrameFault::kBadTag, "hello is not signed with this job's key");
  }
  control::Hello hello;
  FrameCheck check = control::DecodeHello(frame.body, &hello);
  if (!check.ok()) return Reject(check.fault, check.detail);
  const std::string& expected_job = context_->options->job_id;
  if (!expected_job.empty() && hello.job_id != expected_job) {
    return Reject(FrameFault::kBadTag,
                  "job id '" + hello.job_id + "' is not this server's job '" + expected_job + "'");
  }
  job_id_ = hello.job_id;
  control::Nonce server_nonce = control::NewNonce();
  control::SessionKeys keys =
      control::DeriveSessionKeys(context_->options->key, job_id_, hello.client_nonce, server_nonce);
  channel_.emplace(keys.server_to_client, keys.client_to_server, /*next_send=*/0,
                   /*next_recv=*/1, context_->options->max_frame_bytes);
  state_ = State::kAuth;
  Send(channel_->Seal(FrameType::kServerHello, control::EncodeServerHello(server_nonce)));
  ReadHeader();
}

void RendezvousConnection::OnAuth() {
  Frame frame;
  FrameCheck check = channel_->Open(buffer_, &frame);
  if (!check.ok()) return Reject(check.fault, check.detail);
  if (frame.header.type != FrameType::kAuth) {
    return Reject(FrameFault::kMalformed,
                  std::string("expected auth, got ") + control::FrameTypeName(frame.header.type));
  }
  frame_timer_.cancel();
  state_ = State::kReady;
  HVD_LOG_DEBUG("rendezvous server {}: {} authenticated for job '{}'", context_->server_name, peer_,
                job_id_);
  Send(channel_->Seal(FrameType::kAuthOk, ""));
  ReadHeader();
}

void RendezvousConnection::OnRequest() {
  Frame frame;
  FrameCheck check = channel_->Open(buffer_, &frame);
  if (!check.ok()) return Reject(check.fault, check.detail);
  Result<KvRequest> request = control::DecodeKvRequest(frame.header.type, frame.body);
  if (!request.ok()) return Reject(FrameFault::kMalformed, request.status().message());
  context_->counters->requests.fetch_add(1, std::memory_order_relaxed);
  HandleRequest(*request);
}

namespace {

// The reason of the aborted prefix `key` falls under (RendezvousServer::AbortPrefix), if any.
const std::string* AbortedReason(const ConnectionContext& context, const std::string& key) {
  if (context.aborted_prefixes == nullptr) return nullptr;
  for (const auto& [prefix, reason] : *context.aborted_prefixes) {
    if (key.starts_with(prefix)) return &reason;
  }
  return nullptr;
}

}  // namespace

void RendezvousConnection::HandleRequest(const KvRequest& request) {
  control::KvStore& store = *context_->store;
  KvResponse response;
  if (request.op != FrameType::kFinishScope) {
    if (const std::string* reason = AbortedReason(*context_, request.key)) {
      Respond({StatusCode::kAborted, *reason + " (key '" + request.key + "')", "", 0});
      return ReadHeader();
    }
  }
  const RendezvousServerOptions& options = *context_->options;
  switch (request.op) {
    case FrameType::kSet:
      store.Set(job_id_, request.key, request.value);
      if (options.on_observed_set && request.key.starts_with(options.observed_prefix)) {
        options.on_observed_set(request.key, request.value);
      }
      break;
    case FrameType::kGet:
      if (auto value = store.Get(job_id_, request.key)) {
        response.value = std::move(*value);
      } else {
        response.code = StatusCode::kNotFound;
        response.message = "key '" + request.key + "' is not set";
      }
      break;
    case FrameType::kAdd: {
      Result<int64_t> sum = store.Add(job_id_, request.key, request.number);
      if (sum.ok()) {
        response.number = *sum;
      } else {
        response.code = sum.status().code();
        response.message = sum.status().message();
      }
      break;
    }
    case FrameType::kDelete:
      store.Delete(job_id_, request.key);
      break;
    case FrameType::kFinishScope: {
      Result<bool> done = store.FinishScope(job_id_, request.key, request.number, id_);
      if (!done.ok()) {
        response.code = done.status().code();
        response.message = done.status().message();
      }
      break;
    }
    case FrameType::kWait:
      return StartWait(request);
    default:
      return Reject(FrameFault::kMalformed, "not a request");
  }
  Respond(std::move(response));
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
      context_->store->GetOrWait(job_id_, request.key, std::move(on_set), &waiter);
  wait_key_ = request.key;
  wait_timeout_ms_ = std::min(request.timeout_ms, kMaxWaitMs);
  waiting_ = true;
  if (value) return FinishWait(std::move(value));
  waiter_id_ = waiter;
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

void RendezvousConnection::FinishWait(std::optional<std::string> value) {
  if (!waiting_ || state_ != State::kReady) return;
  waiting_ = false;
  wait_timer_.cancel();
  KvResponse response;
  if (value) {
    response.value = std::move(*value);
  } else {
    response.code = StatusCode::kTimeout;
    response.message =
        "key '" + wait_key_ + "' was not set within " + std::to_string(wait_timeout_ms_) + " ms";
  }
  Respond(std::move(response));
  ReadHeader();
}

void RendezvousConnection::Respond(KvResponse response) {
  Send(channel_->Seal(FrameType::kResponse, control::EncodeKvResponse(response)));
}

void RendezvousConnection::Send(std::string bytes) {
  write_queue_.push_back(std::move(bytes));
  if (write_queue_.size() == 1) WriteNext();
}

void RendezvousConnection::WriteNext() {
  asio::async_write(socket_, asio::buffer(write_queue_.front()),
                    [self = shared_from_this()](const asio::error_code& ec, size_t) {
                      self->Guarded("write", [&] {
                        if (self->state_ == State::kClosed) return;
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
  if (state_ == State::kClosed) return;
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
  HVD_LOG_WARNING("rendezvous server {}: rejected connection from {}: {}: {}",
                  context_->server_name, peer_, control::FrameFaultName(fault), detail);
  // Only a client that got the framing right but not the key hears why (see frame.h).
  if (fault == FrameFault::kBadTag && state_ == State::kHello) {
    SendNow(socket_, control::EncodeReject(detail));
  }
  Close();
}

void RendezvousConnection::RejectHandshakeTimeout() {
  context_->counters->handshake_timeouts.fetch_add(1);
  HVD_LOG_WARNING(
      "rendezvous server {}: rejected connection from {}: no complete handshake "
      "within {} ms",
      context_->server_name, peer_, context_->options->handshake_timeout.count());
  Close();
}

void RendezvousConnection::Shutdown() {
  if (state_ == State::kClosed) return;
  if (waiting_ && context_->store->CancelWait(waiter_id_)) {
    KvResponse response{StatusCode::kAborted, "rendezvous server is shutting down", "", 0};
    SendNow(socket_, channel_->Seal(FrameType::kResponse, control::EncodeKvResponse(response)));
  }
  waiting_ = false;
  Close();
}

void RendezvousConnection::AbortWait(const std::string& prefix, const std::string& reason) {
  if (state_ != State::kReady || !waiting_ || !wait_key_.starts_with(prefix)) return;
  // When CancelWait loses the race, the set's posted FinishWait answers instead.
  if (!context_->store->CancelWait(waiter_id_)) return;
  waiting_ = false;
  wait_timer_.cancel();
  Respond({StatusCode::kAborted, reason + " (key '" + wait_key_ + "')", "", 0});
  ReadHeader();
}

void RendezvousConnection::Close() {
  if (state_ == State::kClosed) return;
  state_ = State::kClosed;
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
