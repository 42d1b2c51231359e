#include "common/tcp_kv_client.h"

#include <algorithm>
#include <chrono>
#include <string_view>
#include <thread>
#include <utility>

#include "common/printable.h"

namespace hvd::control {
namespace {

using Clock = DeadlineSocket::Clock;

std::string Describe(const KvRequest& request, const std::string& peer) {
  return std::string("kv ") + FrameTypeName(request.op) + " '" + request.key + "' at " + peer;
}

// Runs the handshake of common/frame.h and returns the established channel. `*no_reply` says
// the server closed the connection before any byte of its reply (it had too many connections
// in their handshake: the caller tries again).
Result<FrameChannel> Handshake(DeadlineSocket& socket, const JobKey& key, const std::string& job_id,
                               uint32_t max_frame_bytes, Clock::time_point deadline,
                               bool* no_reply) {
  const std::string where = "handshake with rendezvous server " + socket.peer();
  Hello hello{NewNonce(), job_id};
  Status sent = socket.WriteAll(
      EncodeFrame(HelloKey(key), FrameType::kHello, 0, EncodeHello(hello)), deadline);
  if (!sent.ok()) {
    *no_reply = sent.code() == StatusCode::kIoError;  // closed (EPIPE, ECONNRESET) at once
    return sent.WithContext(where);
  }

  std::string bytes;
  Status read = ReadFrameBytes(socket, kMaxHandshakeBodyBytes, deadline, &bytes);
  if (!read.ok()) {
    *no_reply = bytes.empty() && read.code() == StatusCode::kIoError;
    return read.WithContext(where);
  }
  Frame reply;
  FrameCheck check = ParseFrame(bytes, kMaxHandshakeBodyBytes, &reply);
  if (check.ok() && reply.header.type == FrameType::kReject) {
    const std::string reason = Printable(reply.body.size() >= 4 ? reply.body.substr(4) : "");
    const bool job = reason.find("job id") != std::string::npos;
    return Status::PermissionDenied(
        where + ": server refused job '" + job_id + "': " + reason +
        (job ? " (is HVD_JOB_ID this job's?)" : " (is HVD_SECRET_FD the key of this job?)"));
  }
  Nonce server_nonce{};
  if (check.ok() && reply.header.type != FrameType::kServerHello) {
    check = {FrameFault::kMalformed,
             std::string("unexpected ") + FrameTypeName(reply.header.type) + " frame"};
  }
  if (check.ok()) check = DecodeServerHello(reply.body, &server_nonce);
  if (!check.ok()) return Status::IoError(where + ": " + check.detail);
  SessionKeys keys = DeriveSessionKeys(key, job_id, hello.client_nonce, server_nonce);
  if (!FrameTagValid(keys.server_to_client, bytes) || reply.header.sequence != 0) {
    return Status::PermissionDenied(where + ": the server does not hold this job's key");
  }

  FrameChannel channel(keys.client_to_server, keys.server_to_client, 1, 1, max_frame_bytes);
  HVD_RETURN_IF_ERROR(socket.WriteAll(channel.Seal(FrameType::kAuth, ""), deadline));
  bytes.clear();
  read = ReadFrameBytes(socket, max_frame_bytes, deadline, &bytes);
  if (!read.ok()) return read.WithContext(where);
  check = channel.Open(bytes, &reply);
  if (check.ok() && reply.header.type != FrameType::kAuthOk) {
    check = {FrameFault::kMalformed,
             std::string("expected auth-ok, got ") + FrameTypeName(reply.header.type)};
  }
  if (!check.ok()) return Status::PermissionDenied(where + ": " + check.detail);
  return channel;
}

}  // namespace

Status ReadFrameBytes(DeadlineSocket& socket, uint32_t max_body, Clock::time_point deadline,
                      std::string* frame) {
  HVD_RETURN_IF_ERROR(socket.ReadExact(kFrameHeaderBytes, frame, deadline));
  FrameHeader header;
  FrameCheck check = DecodeHeader(*frame, max_body, &header);
  if (!check.ok()) {
    return Status::IoError(std::string(FrameFaultName(check.fault)) + " from " + socket.peer() +
                           ": " + check.detail);
  }
  return socket.ReadExact(header.body_length + kFrameTagBytes, frame, deadline);
}

Result<std::unique_ptr<TcpKvClient>> TcpKvClient::Connect(const std::string& host, uint16_t port,
                                                          const JobKey& key,
                                                          const std::string& job_id,
                                                          std::chrono::milliseconds timeout,
                                                          uint32_t max_frame_bytes) {
  if (job_id.size() > kMaxJobIdBytes) {
    return Status::InvalidArgument("job id of " + std::to_string(job_id.size()) +
                                   " bytes is longer than " + std::to_string(kMaxJobIdBytes));
  }
  auto deadline = Clock::now() + timeout;
  // A server that closes the connection before replying has too many connections in their
  // handshake (launcher/rendezvous/rendezvous_server.cc, silent peers holding sockets): try
  // again until the deadline, 50 ms apart growing to 1 s (until 2026-12-01 the rank failed).
  auto pause = std::chrono::milliseconds(50);
  for (;;) {
    HVD_ASSIGN_OR_RETURN(DeadlineSocket socket, DeadlineSocket::Connect(host, port, deadline));
    bool no_reply = false;
    Result<FrameChannel> channel =
        Handshake(socket, key, job_id, max_frame_bytes, deadline, &no_reply);
    if (channel.ok()) {
      return std::unique_ptr<TcpKvClient>(
          new TcpKvClient(std::move(socket), std::move(*channel), timeout));
    }
    if (!no_reply || Clock::now() + pause >= deadline) return channel.status();
    std::this_thread::sleep_for(pause);
    pause = std::min<std::chrono::milliseconds>(pause * 2, std::chrono::seconds(1));
  }
}

TcpKvClient::TcpKvClient(DeadlineSocket socket, FrameChannel channel,
                         std::chrono::milliseconds io_timeout)
    : socket_(std::move(socket)), channel_(std::move(channel)), io_timeout_(io_timeout) {}

Result<KvResponse> TcpKvClient::Call(const KvRequest& request,
                                     std::chrono::milliseconds extra_time) {
  std::lock_guard<std::mutex> lock(mu_);
  const std::string what = Describe(request, socket_.peer());
  if (!broken_.ok()) {
    return Status(broken_.code(),
                  what + ": connection unusable after an earlier error: " + broken_.message());
  }
  std::string body = EncodeKvRequest(request);
  if (body.size() > channel_.max_body()) {
    return Status::InvalidArgument(what + ": request of " + std::to_string(body.size()) +
                                   " bytes exceeds the frame limit of " +
                                   std::to_string(channel_.max_body()));
  }
  Result<KvResponse> response = CallLocked(request, Clock::now() + io_timeout_ + extra_time);
  if (!response.ok()) {
    // The stream position is unknown after any transport failure; never reuse it.
    broken_ = response.status();
    socket_.Close();
    return response.status().WithContext(what);
  }
  if (response->code != StatusCode::kOk)
    return Status(response->code, what + ": " + response->message);
  return response;
}

Result<KvResponse> TcpKvClient::CallLocked(const KvRequest& request, Clock::time_point deadline) {
  HVD_RETURN_IF_ERROR(
      socket_.WriteAll(channel_.Seal(request.op, EncodeKvRequest(request)), deadline));
  std::string bytes;
  HVD_RETURN_IF_ERROR(ReadFrameBytes(socket_, channel_.max_body(), deadline, &bytes));
  Frame frame;
  FrameCheck check = channel_.Open(bytes, &frame);
  if (check.ok() && frame.header.type != FrameType::kResponse) {
    check = {FrameFault::kMalformed,
             std::string("unexpected ") + FrameTypeName(frame.header.type) + " frame"};
  }
  if (!check.ok()) {
    return Status::IoError(std::string(FrameFaultName(check.fault)) +
                           " from server: " + check.detail);
  }
  return DecodeKvResponse(frame.body);
}

Status TcpKvClient::Set(const std::string& key, const std::string& value) {
  return Call({FrameType::kSet, key, value, 0, 0}, {}).status();
}

Result<std::string> TcpKvClient::Get(const std::string& key) {
  HVD_ASSIGN_OR_RETURN(KvResponse response, Call({FrameType::kGet, key, "", 0, 0}, {}));
  return std::move(response.value);
}

Result<std::string> TcpKvClient::Wait(const std::string& key, std::chrono::milliseconds timeout) {
  if (timeout.count() < 0) timeout = std::chrono::milliseconds(0);
  KvRequest request{FrameType::kWait, key, "", 0, static_cast<uint64_t>(timeout.count())};
  HVD_ASSIGN_OR_RETURN(KvResponse response, Call(request, timeout));
  return std::move(response.value);
}

Result<int64_t> TcpKvClient::Add(const std::string& key, int64_t delta) {
  HVD_ASSIGN_OR_RETURN(KvResponse response, Call({FrameType::kAdd, key, "", delta, 0}, {}));
  return response.number;
}

Status TcpKvClient::FinishScope(const std::string& prefix, int expected) {
  return Call({FrameType::kFinishScope, prefix, "", expected, 0}, {}).status();
}

Status TcpKvClient::Delete(const std::string& key) {
  return Call({FrameType::kDelete, key, "", 0, 0}, {}).status();
}

}  // namespace hvd::control
