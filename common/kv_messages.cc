#include "common/kv_messages.h"

#include <charconv>

#include "common/byte_codec.h"

namespace hvd::control {

std::string ShutdownCauseKey(int64_t round, int rank) {
  std::string key(kShutdownCausePrefix);
  if (round > 0) key += std::to_string(round) + "/";
  return key + std::to_string(rank);
}

std::optional<int> DecodeShutdownCause(std::string_view value) {
  // As ShutdownCause writes it: decimal digits, no sign, no leading zero ("-0" read as rank 0
  // until 2026-11-30, found by the kv_messages fuzz target).
  if (value.empty() || value.front() < '0' || value.front() > '9' ||
      (value.front() == '0' && value.size() > 1)) {
    return std::nullopt;
  }
  int rank = -1;
  auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), rank);
  if (ec != std::errc() || end != value.data() + value.size() || rank < 0) return std::nullopt;
  return rank;
}

std::string EncodeKvRequest(const KvRequest& request) {
  ByteWriter w;
  w.PutBytes(request.key);
  switch (request.op) {
    case FrameType::kSet:
      w.PutBytes(request.value);
      break;
    case FrameType::kWait:
      w.PutU64(request.timeout_ms);
      break;
    case FrameType::kAdd:
    case FrameType::kFinishScope:
      w.PutI64(request.number);
      break;
    default:
      break;
  }
  return w.Take();
}

Result<KvRequest> DecodeKvRequest(FrameType op, std::string_view body) {
  if (!IsRequestType(op)) {
    return Status::InvalidArgument(std::string("frame type ") + FrameTypeName(op) +
                                   " is not a request");
  }
  KvRequest request;
  request.op = op;
  ByteReader r(body);
  auto key = r.GetBytes();
  if (key) request.key = std::move(*key);
  switch (op) {
    case FrameType::kSet:
      if (auto value = r.GetBytes()) request.value = std::move(*value);
      break;
    case FrameType::kWait:
      if (auto timeout = r.GetU64()) request.timeout_ms = *timeout;
      break;
    case FrameType::kAdd:
    case FrameType::kFinishScope:
      if (auto number = r.GetI64()) request.number = *number;
      break;
    default:
      break;
  }
  if (!r.Done()) {
    return Status::InvalidArgument(std::string(FrameTypeName(op)) + " request body of " +
                                   std::to_string(body.size()) + " bytes does not parse");
  }
  return request;
}

std::string EncodeKvResponse(const KvResponse& response) {
  ByteWriter w;
  w.PutU32(static_cast<uint32_t>(response.code));
  w.PutBytes(response.message);
  w.PutBytes(response.value);
  w.PutI64(response.number);
  return w.Take();
}

Result<KvResponse> DecodeKvResponse(std::string_view body) {
  ByteReader r(body);
  auto code = r.GetU32();
  auto message = r.GetBytes();
  auto value = r.GetBytes();
  auto number = r.GetI64();
  if (!r.Done()) {
    return Status::InvalidArgument("response body of " + std::to_string(body.size()) +
                                   " bytes does not parse");
  }
  if (*code > static_cast<uint32_t>(StatusCode::kPermissionDenied)) {
    return Status::InvalidArgument("response carries unknown status code " + std::to_string(*code));
  }
  return KvResponse{static_cast<StatusCode>(*code), std::move(*message), std::move(*value),
                    *number};
}

}  // namespace hvd::control
