#include "launcher/rendezvous/rendezvous_session.h"

#include "common/check.h"

namespace hvd::launcher::internal {
namespace {

using control::Frame;
using control::FrameCheck;
using control::FrameFault;
using control::FrameType;
using control::KvRequest;
using control::KvResponse;
using Step = RendezvousSession::Step;

Step Fault(FrameFault fault, std::string detail) { return {fault, std::move(detail), "", {}}; }
Step Fault(const FrameCheck& check) { return Fault(check.fault, check.detail); }

// The reason of the aborted prefix `key` falls under (RendezvousServer::AbortPrefix), if any.
const std::string* AbortedReason(const ConnectionContext& context, const std::string& key) {
  if (context.aborted_prefixes == nullptr) return nullptr;
  for (const auto& [prefix, reason] : *context.aborted_prefixes) {
    if (key.starts_with(prefix)) return &reason;
  }
  return nullptr;
}

}  // namespace

RendezvousSession::RendezvousSession(const ConnectionContext* context, uint64_t id,
                                     std::function<control::Nonce()> new_nonce)
    : context_(context), id_(id), new_nonce_(std::move(new_nonce)) {}

uint32_t RendezvousSession::max_body() const {
  return state_ == State::kReady ? context_->options->max_frame_bytes
                                 : control::kMaxHandshakeBodyBytes;
}

Step RendezvousSession::OnFrame(std::string_view frame) {
  switch (state_) {
    case State::kHello:
      return OnHello(frame);
    case State::kAuth:
      return OnAuth(frame);
    case State::kReady:
      return OnRequest(frame);
    case State::kClosed:
      break;
  }
  return Fault(FrameFault::kMalformed, "frame after the connection closed");
}

Step RendezvousSession::OnHello(std::string_view bytes) {
  Frame frame;
  FrameCheck check = control::ParseFrame(bytes, control::kMaxHandshakeBodyBytes, &frame);
  if (!check.ok()) return Fault(check);
  if (frame.header.type != FrameType::kHello || frame.header.sequence != 0) {
    return Fault(FrameFault::kMalformed,
                 std::string("expected hello, got ") + control::FrameTypeName(frame.header.type));
  }
  if (!control::FrameTagValid(context_->hello_key, bytes)) {
    return Fault(FrameFault::kBadTag, "hello is not signed with this job's key");
  }
  control::Hello hello;
  check = control::DecodeHello(frame.body, &hello);
  if (!check.ok()) return Fault(check);
  const std::string& expected_job = context_->options->job_id;
  if (!expected_job.empty() && hello.job_id != expected_job) {
    return Fault(FrameFault::kBadTag,
                 "job id '" + hello.job_id + "' is not this server's job '" + expected_job + "'");
  }
  job_id_ = hello.job_id;
  control::Nonce server_nonce = new_nonce_();
  control::SessionKeys keys =
      control::DeriveSessionKeys(context_->options->key, job_id_, hello.client_nonce, server_nonce);
  channel_.emplace(keys.server_to_client, keys.client_to_server, /*next_send=*/0,
                   /*next_recv=*/1, context_->options->max_frame_bytes);
  state_ = State::kAuth;
  return {FrameFault::kNone,
          "",
          channel_->Seal(FrameType::kServerHello, control::EncodeServerHello(server_nonce)),
          {}};
}

Step RendezvousSession::OnAuth(std::string_view bytes) {
  Frame frame;
  FrameCheck check = channel_->Open(bytes, &frame);
  if (!check.ok()) return Fault(check);
  if (frame.header.type != FrameType::kAuth) {
    return Fault(FrameFault::kMalformed,
                 std::string("expected auth, got ") + control::FrameTypeName(frame.header.type));
  }
  state_ = State::kReady;
  return {FrameFault::kNone, "", channel_->Seal(FrameType::kAuthOk, ""), {}};
}

Step RendezvousSession::OnRequest(std::string_view bytes) {
  Frame frame;
  FrameCheck check = channel_->Open(bytes, &frame);
  if (!check.ok()) return Fault(check);
  Result<KvRequest> request = control::DecodeKvRequest(frame.header.type, frame.body);
  if (!request.ok()) return Fault(FrameFault::kMalformed, request.status().message());
  context_->counters->requests.fetch_add(1, std::memory_order_relaxed);
  return Execute(*request);
}

Step RendezvousSession::Execute(const KvRequest& request) {
  control::KvStore& store = *context_->store;
  KvResponse response;
  if (request.op != FrameType::kFinishScope) {
    if (const std::string* reason = AbortedReason(*context_, request.key)) {
      return {FrameFault::kNone,
              "",
              Seal({StatusCode::kAborted, *reason + " (key '" + request.key + "')", "", 0}),
              {}};
    }
  }
  const RendezvousServerOptions& options = *context_->options;
  switch (request.op) {
    case FrameType::kSet:
      // A value the answer to `get` (or `wait`) could not carry under the frame cap: refused
      // here, naming the key, rather than stored and unreadable (until 2026-12-01 a value within
      // 8 + key-length bytes of the cap was stored, and every later get of it failed).
      if (request.value.size() + control::kKvResponseOverhead > max_body()) {
        response.code = StatusCode::kInvalidArgument;
        response.message = "value of " + std::to_string(request.value.size()) + " bytes for key '" +
                           request.key + "' is too large to be read back: at most " +
                           std::to_string(max_body() - control::kKvResponseOverhead) + " bytes";
        break;
      }
      store.Set(job_id_, request.key, request.value);
      for (const RendezvousServerOptions::KeyObserver& observer : options.observers) {
        if (request.key.starts_with(observer.prefix)) observer.on_set(request.key, request.value);
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
      return {FrameFault::kNone, "", "", request};
    default:
      return Fault(FrameFault::kMalformed, "not a request");
  }
  return {FrameFault::kNone, "", Seal(response), {}};
}

std::string RendezvousSession::WaitAnswer(const std::string& key, std::optional<std::string> value,
                                          uint64_t timeout_ms) {
  KvResponse response;
  if (value) {
    response.value = std::move(*value);
  } else {
    response.code = StatusCode::kTimeout;
    response.message = "key '" + key + "' was not set within " + std::to_string(timeout_ms) + " ms";
  }
  return Seal(response);
}

std::string RendezvousSession::Seal(const KvResponse& response) {
  HVD_CHECK(channel_.has_value()) << "a response before the handshake";
  return channel_->Seal(FrameType::kResponse, control::EncodeKvResponse(response));
}

}  // namespace hvd::launcher::internal
