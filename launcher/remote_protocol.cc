#include "launcher/remote_protocol.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "common/byte_codec.h"

namespace hvd::launcher {
namespace {

constexpr uint8_t kTypeStart = 1;
constexpr uint8_t kTypeSignal = 2;
constexpr std::string_view kMagic = "HVDA";
// Caps on counts, checked before reserving, so a corrupt count cannot exhaust memory.
constexpr uint32_t kMaxArgs = 1u << 16;
constexpr uint32_t kMaxEnv = 1u << 16;
constexpr uint32_t kMaxGraceMs = 3600u * 1000u;

std::string Frame(const std::string& body) {
  control::ByteWriter w;
  w.PutBytes(body);
  return w.Take();
}

Status Malformed(const std::string& what) {
  return Status::InvalidArgument("malformed hvd-agent start frame: " + what);
}

Result<AgentMessage> DecodeStart(control::ByteReader& r) {
  auto magic = r.GetRaw(kMagic.size());
  if (!magic || *magic != kMagic) return Malformed("missing \"HVDA\" magic");
  auto version = r.GetU32();
  if (!version) return Malformed("truncated before the version");
  if (*version != kAgentProtocolVersion) {
    return Status::InvalidArgument("hvd-agent speaks protocol version " +
                                   std::to_string(kAgentProtocolVersion) +
                                   " but the launcher sent version " + std::to_string(*version) +
                                   "; install the same hvd build on every host");
  }
  RemoteRankRequest request;
  auto argc = r.GetU32();
  if (!argc || *argc == 0 || *argc > kMaxArgs) return Malformed("bad argument count");
  for (uint32_t i = 0; i < *argc; ++i) {
    auto arg = r.GetBytes();
    if (!arg) return Malformed("truncated in argv[" + std::to_string(i) + "]");
    request.argv.push_back(std::move(*arg));
  }
  auto envc = r.GetU32();
  if (!envc || *envc > kMaxEnv) return Malformed("bad environment count");
  for (uint32_t i = 0; i < *envc; ++i) {
    auto name = r.GetBytes();
    auto value = r.GetBytes();
    if (!name || !value) return Malformed("truncated in environment entry " + std::to_string(i));
    if (name->empty() || name->find('=') != std::string::npos ||
        name->find('\0') != std::string::npos) {
      return Malformed("invalid environment variable name '" + *name + "'");
    }
    request.env[std::move(*name)] = std::move(*value);
  }
  auto cwd = r.GetBytes();
  auto has_key = r.GetU8();
  if (!cwd || !has_key || *has_key > 1) return Malformed("truncated in cwd or key flag");
  request.cwd = std::move(*cwd);
  if (*has_key == 1) {
    auto raw = r.GetRaw(control::JobKey{}.size());
    if (!raw) return Malformed("truncated job key");
    control::JobKey key{};
    std::memcpy(key.data(), raw->data(), key.size());
    request.job_key = key;
  }
  auto grace_ms = r.GetU32();
  if (!grace_ms || *grace_ms > kMaxGraceMs) return Malformed("bad grace period");
  request.grace_period_s = *grace_ms / 1000.0;
  if (!r.Done()) return Malformed("trailing bytes");
  return AgentMessage(std::move(request));
}

}  // namespace

std::string EncodeStartFrame(const RemoteRankRequest& request) {
  control::ByteWriter w;
  w.PutU8(kTypeStart);
  w.PutRaw(kMagic);
  w.PutU32(kAgentProtocolVersion);
  w.PutU32(static_cast<uint32_t>(request.argv.size()));
  for (const std::string& arg : request.argv) w.PutBytes(arg);
  uint32_t envc = 0;
  for (const auto& [name, value] : request.env) envc += name != "HVD_SECRET_FD" ? 1 : 0;
  w.PutU32(envc);
  for (const auto& [name, value] : request.env) {
    if (name == "HVD_SECRET_FD") continue;
    w.PutBytes(name);
    w.PutBytes(value);
  }
  w.PutBytes(request.cwd);
  w.PutU8(request.job_key ? 1 : 0);
  if (request.job_key) {
    w.PutRaw(std::string_view(reinterpret_cast<const char*>(request.job_key->data()),
                              request.job_key->size()));
  }
  double grace_ms = std::clamp(request.grace_period_s, 0.0, kMaxGraceMs / 1000.0) * 1000.0;
  w.PutU32(static_cast<uint32_t>(std::lround(grace_ms)));
  return Frame(w.data());
}

std::string EncodeSignalFrame(int signo) {
  control::ByteWriter w;
  w.PutU8(kTypeSignal);
  w.PutU32(static_cast<uint32_t>(signo));
  return Frame(w.data());
}

Result<AgentMessage> DecodeAgentFrameBody(std::string_view body) {
  control::ByteReader r(body);
  auto type = r.GetU8();
  if (!type) return Status::InvalidArgument("empty hvd-agent frame");
  if (*type == kTypeStart) return DecodeStart(r);
  if (*type == kTypeSignal) {
    auto signo = r.GetU32();
    if (!signo || !r.Done() || *signo == 0 || *signo > 64) {
      return Status::InvalidArgument("malformed hvd-agent signal frame");
    }
    return AgentMessage(AgentSignal{static_cast<int>(*signo)});
  }
  return Status::InvalidArgument("unknown hvd-agent frame type " + std::to_string(*type));
}

Result<std::optional<AgentMessage>> AgentFrameReader::Next() {
  control::ByteReader header(buffer_);
  auto length = header.GetU32();
  if (!length) return std::optional<AgentMessage>();
  const size_t limit = first_ ? kMaxStartFrameBytes : kMaxControlFrameBytes;
  if (*length > limit) {
    return Status::InvalidArgument("hvd-agent frame of " + std::to_string(*length) +
                                   " bytes exceeds the limit of " + std::to_string(limit));
  }
  if (buffer_.size() < 4 + static_cast<size_t>(*length)) return std::optional<AgentMessage>();
  Result<AgentMessage> message = DecodeAgentFrameBody(std::string_view(buffer_).substr(4, *length));
  buffer_.erase(0, 4 + static_cast<size_t>(*length));
  if (!message.ok()) return message.status();
  const bool is_start = std::holds_alternative<RemoteRankRequest>(*message);
  if (is_start != first_) {
    return Status::InvalidArgument(first_ ? "hvd-agent expected a start frame first"
                                          : "hvd-agent received a second start frame");
  }
  first_ = false;
  return std::optional<AgentMessage>(std::move(*message));
}

}  // namespace hvd::launcher
