#include "common/frame.h"

#include <openssl/rand.h>

#include "common/byte_codec.h"
#include "common/check.h"

namespace hvd::control {
namespace {

std::string Hex(uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string_view AsChars(const uint8_t* data, size_t n) {
  return {reinterpret_cast<const char*>(data), n};
}

MacKey DeriveDirectionKey(const JobKey& job_key, std::string_view label, std::string_view job_id,
                          const Nonce& client_nonce, const Nonce& server_nonce) {
  ByteWriter length;
  length.PutU32(static_cast<uint32_t>(job_id.size()));
  return HmacSha256(job_key, {AsBytes(label), AsBytes(length.data()), AsBytes(job_id), client_nonce,
                              server_nonce});
}

}  // namespace

bool IsKnownFrameType(uint8_t type) {
  return (type >= 1 && type <= 5) || (type >= 16 && type <= 21) || type == 32;
}

bool IsRequestType(FrameType type) {
  uint8_t t = static_cast<uint8_t>(type);
  return t >= 16 && t <= 21;
}

const char* FrameTypeName(FrameType type) {
  switch (type) {
    case FrameType::kHello:
      return "hello";
    case FrameType::kServerHello:
      return "server-hello";
    case FrameType::kAuth:
      return "auth";
    case FrameType::kAuthOk:
      return "auth-ok";
    case FrameType::kReject:
      return "reject";
    case FrameType::kSet:
      return "set";
    case FrameType::kGet:
      return "get";
    case FrameType::kWait:
      return "wait";
    case FrameType::kAdd:
      return "add";
    case FrameType::kDelete:
      return "delete";
    case FrameType::kFinishScope:
      return "finish-scope";
    case FrameType::kResponse:
      return "response";
  }
  return "unknown";
}

const char* FrameFaultName(FrameFault fault) {
  switch (fault) {
    case FrameFault::kNone:
      return "ok";
    case FrameFault::kMalformed:
      return "malformed frame";
    case FrameFault::kOversize:
      return "oversized frame";
    case FrameFault::kTruncated:
      return "truncated frame";
    case FrameFault::kBadTag:
      return "authentication failed";
    case FrameFault::kOutOfSequence:
      return "replayed or reordered frame";
  }
  return "unknown";
}

std::string EncodeHeader(const FrameHeader& header) {
  ByteWriter w;
  w.PutU32(kFrameMagic);
  w.PutU8(kFrameVersion);
  w.PutU8(static_cast<uint8_t>(header.type));
  w.PutU8(static_cast<uint8_t>(header.flags >> 8));
  w.PutU8(static_cast<uint8_t>(header.flags));
  w.PutU32(header.body_length);
  w.PutU64(header.sequence);
  return w.Take();
}

FrameCheck DecodeHeader(std::string_view bytes, uint32_t max_body, FrameHeader* out) {
  if (bytes.size() < kFrameHeaderBytes) {
    return {FrameFault::kTruncated, "header has " + std::to_string(bytes.size()) + " of " +
                                        std::to_string(kFrameHeaderBytes) + " bytes"};
  }
  ByteReader r(bytes.substr(0, kFrameHeaderBytes));
  uint32_t magic = *r.GetU32();
  uint8_t version = *r.GetU8();
  uint8_t type = *r.GetU8();
  uint16_t flags = static_cast<uint16_t>((*r.GetU8() << 8) | *r.GetU8());
  uint32_t length = *r.GetU32();
  uint64_t sequence = *r.GetU64();
  if (magic != kFrameMagic) {
    return {FrameFault::kMalformed, "bad magic " + Hex(magic) + " (not an hvd control frame)"};
  }
  if (version != kFrameVersion) {
    return {FrameFault::kMalformed, "unsupported protocol version " + std::to_string(version)};
  }
  if (!IsKnownFrameType(type)) {
    return {FrameFault::kMalformed, "unknown frame type " + std::to_string(type)};
  }
  if (flags != 0) return {FrameFault::kMalformed, "reserved flags set: " + Hex(flags)};
  if (length > max_body) {
    return {FrameFault::kOversize, "announced body of " + std::to_string(length) +
                                       " bytes exceeds the limit of " + std::to_string(max_body)};
  }
  *out = FrameHeader{static_cast<FrameType>(type), flags, length, sequence};
  return {};
}

std::string EncodeFrame(const MacKey& key, FrameType type, uint64_t sequence,
                        std::string_view body) {
  HVD_CHECK_LE(body.size(), static_cast<size_t>(UINT32_MAX));
  std::string frame = EncodeHeader({type, 0, static_cast<uint32_t>(body.size()), sequence});
  frame.append(body);
  MacTag tag = HmacSha256(key, {AsBytes(frame)});
  frame.append(AsChars(tag.data(), tag.size()));
  return frame;
}

FrameCheck ParseFrame(std::string_view frame, uint32_t max_body, Frame* out) {
  FrameHeader header;
  FrameCheck check = DecodeHeader(frame, max_body, &header);
  if (!check.ok()) return check;
  size_t expected = kFrameHeaderBytes + header.body_length + kFrameTagBytes;
  if (frame.size() < expected) {
    return {FrameFault::kTruncated, "frame has " + std::to_string(frame.size()) + " of " +
                                        std::to_string(expected) + " announced bytes"};
  }
  if (frame.size() > expected) {
    return {FrameFault::kMalformed,
            std::to_string(frame.size() - expected) + " bytes after the frame's tag"};
  }
  out->header = header;
  out->body.assign(frame.substr(kFrameHeaderBytes, header.body_length));
  return {};
}

bool FrameTagValid(const MacKey& key, std::string_view frame) {
  if (frame.size() < kFrameHeaderBytes + kFrameTagBytes) return false;
  std::string_view signed_part = frame.substr(0, frame.size() - kFrameTagBytes);
  MacTag expected = HmacSha256(key, {AsBytes(signed_part)});
  return MacEquals(expected, AsBytes(frame.substr(signed_part.size())));
}

FrameChannel::FrameChannel(const MacKey& send_key, const MacKey& recv_key, uint64_t next_send,
                           uint64_t next_recv, uint32_t max_body)
    : send_key_(send_key),
      recv_key_(recv_key),
      next_send_(next_send),
      next_recv_(next_recv),
      max_body_(max_body) {}

std::string FrameChannel::Seal(FrameType type, std::string_view body) {
  return EncodeFrame(send_key_, type, next_send_++, body);
}

FrameCheck FrameChannel::Open(std::string_view frame, Frame* out) {
  FrameCheck check = ParseFrame(frame, max_body_, out);
  if (!check.ok()) return check;
  if (!FrameTagValid(recv_key_, frame)) {
    return {FrameFault::kBadTag, std::string("tag of ") + FrameTypeName(out->header.type) +
                                     " frame does not verify under this connection's key"};
  }
  if (out->header.sequence != next_recv_) {
    return {FrameFault::kOutOfSequence, "sequence number " + std::to_string(out->header.sequence) +
                                            ", expected " + std::to_string(next_recv_)};
  }
  ++next_recv_;
  return {};
}

Nonce NewNonce() {
  Nonce nonce{};
  HVD_CHECK(RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) == 1)
      << "the OS random number generator is unavailable";
  return nonce;
}

MacKey HelloKey(const JobKey& job_key) { return HmacSha256(job_key, {AsBytes("hvd-v1 hello")}); }

SessionKeys DeriveSessionKeys(const JobKey& job_key, std::string_view job_id,
                              const Nonce& client_nonce, const Nonce& server_nonce) {
  return {DeriveDirectionKey(job_key, "hvd-v1 session c2s", job_id, client_nonce, server_nonce),
          DeriveDirectionKey(job_key, "hvd-v1 session s2c", job_id, client_nonce, server_nonce)};
}

std::string EncodeHello(const Hello& hello) {
  ByteWriter w;
  w.PutRaw(AsChars(hello.client_nonce.data(), hello.client_nonce.size()));
  w.PutBytes(hello.job_id);
  return w.Take();
}

FrameCheck DecodeHello(std::string_view body, Hello* out) {
  ByteReader r(body);
  auto nonce = r.GetRaw(kNonceBytes);
  auto job_id = r.GetBytes();
  if (!nonce || !job_id || !r.Done()) return {FrameFault::kMalformed, "hello body does not parse"};
  if (job_id->size() > kMaxJobIdBytes) {
    return {FrameFault::kMalformed, "job id of " + std::to_string(job_id->size()) + " bytes"};
  }
  std::copy(nonce->begin(), nonce->end(), out->client_nonce.begin());
  out->job_id = std::move(*job_id);
  return {};
}

std::string EncodeServerHello(const Nonce& server_nonce) {
  return std::string(AsChars(server_nonce.data(), server_nonce.size()));
}

FrameCheck DecodeServerHello(std::string_view body, Nonce* out) {
  if (body.size() != kNonceBytes) {
    return {FrameFault::kMalformed, "server hello of " + std::to_string(body.size()) + " bytes"};
  }
  std::copy(body.begin(), body.end(), out->begin());
  return {};
}

std::string EncodeReject(std::string_view reason) {
  ByteWriter w;
  w.PutBytes(reason.substr(0, 512));
  std::string frame =
      EncodeHeader({FrameType::kReject, 0, static_cast<uint32_t>(w.data().size()), /*sequence=*/0});
  frame.append(w.data());
  frame.append(kFrameTagBytes, '\0');
  return frame;
}

}  // namespace hvd::control
