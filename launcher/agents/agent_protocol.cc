#include "launcher/agents/agent_protocol.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "common/byte_codec.h"
#include "common/printable.h"

namespace hvd::launcher {
namespace {

enum : uint8_t {
  kHello = 1,
  kStart = 2,
  kSignal = 3,
  kStop = 4,
  kLauncherHeartbeat = 5,
  kReady = 129,
  kStarted = 130,
  kOutput = 131,
  kExit = 132,
  kAgentHeartbeat = 133,
};

constexpr std::string_view kMagic = "HVDA";
// Caps on counts, checked before reserving, so a corrupt count cannot exhaust memory.
constexpr uint32_t kMaxArgs = 1u << 16;
constexpr uint32_t kMaxEnv = 1u << 16;
constexpr uint32_t kMaxMs = 7u * 86400u * 1000u;
constexpr size_t kMaxHostname = 1024;

std::string Frame(const std::string& body) {
  control::ByteWriter w;
  w.PutBytes(body);
  return w.Take();
}

// A duration as the frames carry it: whole milliseconds, clamped to what a u32 holds.
uint32_t WireMillis(double seconds) {
  return static_cast<uint32_t>(std::lround(std::clamp(seconds, 0.0, kMaxMs / 1000.0) * 1000.0));
}

Status Malformed(const char* frame, const std::string& what) {
  return Status::InvalidArgument(std::string("malformed hvd-agent ") + frame + " frame: " + what);
}

Status CheckVersion(control::ByteReader& r, const char* frame, const char* sender) {
  auto magic = r.GetRaw(kMagic.size());
  if (!magic || *magic != kMagic) return Malformed(frame, "missing \"HVDA\" magic");
  auto version = r.GetU32();
  if (!version) return Malformed(frame, "truncated before the version");
  if (*version != kAgentProtocolVersion) {
    return Status::InvalidArgument(
        std::string("hvd-agent protocol version mismatch: this side speaks version ") +
        std::to_string(kAgentProtocolVersion) + " but the " + sender + " sent version " +
        std::to_string(*version) + "; install the same hvd build on every host");
  }
  return Status::OK();
}

Result<LauncherMessage> DecodeHello(control::ByteReader& r) {
  HVD_RETURN_IF_ERROR(CheckVersion(r, "hello", "launcher"));
  AgentHello hello;
  auto has_key = r.GetU8();
  if (!has_key || *has_key > 1) return Malformed("hello", "bad key flag");
  if (*has_key == 1) {
    auto raw = r.GetRaw(control::JobKey{}.size());
    if (!raw) return Malformed("hello", "truncated job key");
    control::JobKey key{};
    std::memcpy(key.data(), raw->data(), key.size());
    hello.job_key = key;
  }
  auto grace = r.GetU32();
  auto interval = r.GetU32();
  auto timeout = r.GetU32();
  if (!grace || !interval || !timeout || *grace > kMaxMs || *interval > kMaxMs ||
      *timeout > kMaxMs) {
    return Malformed("hello", "bad grace period or heartbeat times");
  }
  hello.grace_period_s = *grace / 1000.0;
  hello.heartbeat_interval_s = *interval / 1000.0;
  hello.heartbeat_timeout_s = *timeout / 1000.0;
  auto cwd = r.GetBytes();
  if (!cwd) return Malformed("hello", "truncated working directory");
  hello.cwd = std::move(*cwd);
  if (!r.Done()) return Malformed("hello", "trailing bytes");
  return LauncherMessage(std::move(hello));
}

Result<LauncherMessage> DecodeStart(control::ByteReader& r) {
  AgentStart start;
  auto id = r.GetU32();
  auto argc = r.GetU32();
  if (!id || !argc || *argc == 0 || *argc > kMaxArgs) return Malformed("start", "bad argv count");
  start.id = *id;
  for (uint32_t i = 0; i < *argc; ++i) {
    auto arg = r.GetBytes();
    if (!arg) return Malformed("start", "truncated in argv[" + std::to_string(i) + "]");
    start.argv.push_back(std::move(*arg));
  }
  auto envc = r.GetU32();
  if (!envc || *envc > kMaxEnv) return Malformed("start", "bad environment count");
  for (uint32_t i = 0; i < *envc; ++i) {
    auto name = r.GetBytes();
    auto value = r.GetBytes();
    if (!name || !value) {
      return Malformed("start", "truncated in environment entry " + std::to_string(i));
    }
    if (name->empty() || name->find('=') != std::string::npos ||
        name->find('\0') != std::string::npos) {
      return Malformed("start", "invalid environment variable name '" + *name + "'");
    }
    start.env[std::move(*name)] = std::move(*value);
  }
  if (!r.Done()) return Malformed("start", "trailing bytes");
  return LauncherMessage(std::move(start));
}

Result<int> DecodeSignalNumber(control::ByteReader& r) {
  auto signo = r.GetU32();
  if (!signo || *signo == 0 || *signo > 64) return Malformed("signal", "bad signal number");
  return static_cast<int>(*signo);
}

Result<AgentMessage> DecodeReady(control::ByteReader& r) {
  HVD_RETURN_IF_ERROR(CheckVersion(r, "ready", "agent"));
  AgentReady ready;
  auto hostname = r.GetBytes();
  auto pid = r.GetU32();
  if (!hostname || hostname->size() > kMaxHostname || !pid || !r.Done()) {
    return Malformed("ready", "bad host name or pid");
  }
  ready.hostname = std::move(*hostname);
  ready.pid = *pid;
  return AgentMessage(std::move(ready));
}

Result<AgentMessage> DecodeOutput(control::ByteReader& r) {
  AgentOutput output;
  auto id = r.GetU32();
  auto stream = r.GetU8();
  auto data = r.GetBytes();
  if (!id || !stream || (*stream != 1 && *stream != 2) || !data || !r.Done()) {
    return Malformed("output", "bad rank id, stream or data");
  }
  output.id = *id;
  output.stream = *stream;
  output.data = std::move(*data);
  return AgentMessage(std::move(output));
}

}  // namespace

std::string EncodeHello(const AgentHello& hello) {
  control::ByteWriter w;
  w.PutU8(kHello);
  w.PutRaw(kMagic);
  w.PutU32(kAgentProtocolVersion);
  w.PutU8(hello.job_key ? 1 : 0);
  if (hello.job_key) {
    w.PutRaw(std::string_view(reinterpret_cast<const char*>(hello.job_key->data()),
                              hello.job_key->size()));
  }
  w.PutU32(WireMillis(hello.grace_period_s));
  w.PutU32(WireMillis(hello.heartbeat_interval_s));
  w.PutU32(WireMillis(hello.heartbeat_timeout_s));
  w.PutBytes(hello.cwd);
  return Frame(w.data());
}

std::string EncodeStart(const AgentStart& start) {
  control::ByteWriter w;
  w.PutU8(kStart);
  w.PutU32(start.id);
  w.PutU32(static_cast<uint32_t>(start.argv.size()));
  for (const std::string& arg : start.argv) w.PutBytes(arg);
  uint32_t envc = 0;
  for (const auto& entry : start.env) envc += entry.first != "HVD_SECRET_FD" ? 1 : 0;
  w.PutU32(envc);
  for (const auto& [name, value] : start.env) {
    if (name == "HVD_SECRET_FD") continue;
    w.PutBytes(name);
    w.PutBytes(value);
  }
  return Frame(w.data());
}

std::string EncodeSignal(uint32_t id, int signo) {
  control::ByteWriter w;
  w.PutU8(kSignal);
  w.PutU32(id);
  w.PutU32(static_cast<uint32_t>(signo));
  return Frame(w.data());
}

std::string EncodeStop(uint32_t id) {
  control::ByteWriter w;
  w.PutU8(kStop);
  w.PutU32(id);
  return Frame(w.data());
}

std::string EncodeLauncherHeartbeat() {
  return Frame(std::string(1, static_cast<char>(kLauncherHeartbeat)));
}

std::string EncodeReady(const AgentReady& ready) {
  control::ByteWriter w;
  w.PutU8(kReady);
  w.PutRaw(kMagic);
  w.PutU32(ready.version);
  w.PutBytes(ready.hostname.substr(0, kMaxHostname));
  w.PutU32(ready.pid);
  return Frame(w.data());
}

std::string EncodeStarted(uint32_t id, uint32_t pid) {
  control::ByteWriter w;
  w.PutU8(kStarted);
  w.PutU32(id);
  w.PutU32(pid);
  return Frame(w.data());
}

void AppendOutput(uint32_t id, int stream, std::string_view data, std::string* out) {
  // In frames of at most kMaxOutputChunk: a longer one ends the reader's session (until
  // 2026-12-01 an agent's message about a rank that could not start, quoting an argv of over
  // 64 KiB, did: every rank of the host exited 255).
  do {
    const std::string_view chunk = data.substr(0, kMaxOutputChunk);
    data.remove_prefix(chunk.size());
    control::ByteWriter w;
    const uint32_t body = 1 + 4 + 1 + 4 + static_cast<uint32_t>(chunk.size());
    w.PutU32(body);
    w.PutU8(kOutput);
    w.PutU32(id);
    w.PutU8(static_cast<uint8_t>(stream));
    w.PutU32(static_cast<uint32_t>(chunk.size()));
    out->append(w.data());
    out->append(chunk);
  } while (!data.empty());
}

std::string EncodeExit(uint32_t id, int wait_status, std::string_view kill_cause) {
  control::ByteWriter w;
  w.PutU8(kExit);
  w.PutU32(id);
  w.PutU32(static_cast<uint32_t>(wait_status));
  w.PutBytes(kill_cause.substr(0, kMaxKillCause));
  return Frame(w.data());
}

std::string EncodeAgentHeartbeat() {
  return Frame(std::string(1, static_cast<char>(kAgentHeartbeat)));
}

Result<LauncherMessage> DecodeLauncherFrame(std::string_view body) {
  control::ByteReader r(body);
  auto type = r.GetU8();
  if (!type) return Status::InvalidArgument("empty hvd-agent frame");
  switch (*type) {
    case kHello:
      return DecodeHello(r);
    case kStart:
      return DecodeStart(r);
    case kSignal: {
      auto id = r.GetU32();
      if (!id) return Malformed("signal", "truncated rank id");
      HVD_ASSIGN_OR_RETURN(int signo, DecodeSignalNumber(r));
      if (!r.Done()) return Malformed("signal", "trailing bytes");
      return LauncherMessage(AgentSignal{*id, signo});
    }
    case kStop: {
      auto id = r.GetU32();
      if (!id || !r.Done()) return Malformed("stop", "bad rank id");
      return LauncherMessage(AgentStop{*id});
    }
    case kLauncherHeartbeat:
      if (!r.Done()) return Malformed("heartbeat", "trailing bytes");
      return LauncherMessage(AgentHeartbeat{});
    default:
      return Status::InvalidArgument("unknown hvd-agent frame type " + std::to_string(*type));
  }
}

Result<AgentMessage> DecodeAgentFrame(std::string_view body) {
  control::ByteReader r(body);
  auto type = r.GetU8();
  if (!type) return Status::InvalidArgument("empty frame from hvd-agent");
  switch (*type) {
    case kReady:
      return DecodeReady(r);
    case kStarted: {
      auto id = r.GetU32();
      auto pid = r.GetU32();
      if (!id || !pid || !r.Done()) return Malformed("started", "bad rank id or pid");
      return AgentMessage(AgentStarted{*id, *pid});
    }
    case kOutput:
      return DecodeOutput(r);
    case kExit: {
      auto id = r.GetU32();
      auto status = r.GetU32();
      if (!id || !status) return Malformed("exit", "bad rank id or status");
      auto cause = r.GetBytes();
      if (!cause || cause->size() > kMaxKillCause || !r.Done()) {
        return Malformed("exit", "bad kill cause");
      }
      return AgentMessage(AgentExit{*id, static_cast<int>(*status), std::move(*cause)});
    }
    case kAgentHeartbeat:
      if (!r.Done()) return Malformed("heartbeat", "trailing bytes");
      return AgentMessage(AgentHeartbeat{});
    default:
      return Status::InvalidArgument("unknown frame type " + std::to_string(*type) +
                                     " from hvd-agent");
  }
}

Result<std::optional<std::string>> FrameSplitter::Next() {
  control::ByteReader header(std::string_view(buffer_).substr(pos_));
  auto length = header.GetU32();
  if (!length) return std::optional<std::string>();
  if (*length > max_) {
    return Status::InvalidArgument("hvd-agent frame of " + std::to_string(*length) +
                                   " bytes exceeds the limit of " + std::to_string(max_));
  }
  if (buffered() < 4 + static_cast<size_t>(*length)) return std::optional<std::string>();
  std::string body = buffer_.substr(pos_ + 4, *length);
  pos_ += 4 + static_cast<size_t>(*length);
  if (pos_ == buffer_.size()) {
    buffer_.clear();
    pos_ = 0;
  } else if (pos_ > (64u << 10)) {
    buffer_.erase(0, pos_);
    pos_ = 0;
  }
  return std::optional<std::string>(std::move(body));
}

Result<std::optional<LauncherMessage>> LauncherFrameReader::Next() {
  HVD_ASSIGN_OR_RETURN(std::optional<std::string> body, splitter_.Next());
  if (!body) return std::optional<LauncherMessage>();
  Result<LauncherMessage> message = DecodeLauncherFrame(*body);
  if (!message.ok()) return message.status();
  const bool is_hello = std::holds_alternative<AgentHello>(*message);
  if (is_hello != first_) {
    return Status::InvalidArgument(first_ ? "hvd-agent expected a hello frame first"
                                          : "hvd-agent received a second hello frame");
  }
  first_ = false;
  return std::optional<LauncherMessage>(std::move(*message));
}

void AgentFrameReader::Feed(std::string_view bytes) {
  if (greeted_) {
    splitter_.Feed(bytes);
    return;
  }
  pending_.append(bytes);
  const size_t at = pending_.find(kAgentGreeting);
  if (at != std::string::npos) {
    before_.append(pending_, 0, at);
    splitter_.Feed(std::string_view(pending_).substr(at + kAgentGreeting.size()));
    pending_.clear();
    greeted_ = true;
    return;
  }
  // All but the last few bytes are surely before the greeting (it may be arriving split).
  const size_t keep = std::min(pending_.size(), kAgentGreeting.size() - 1);
  before_.append(pending_, 0, pending_.size() - keep);
  pending_.erase(0, pending_.size() - keep);
}

std::string AgentFrameReader::TakeBeforeGreeting() {
  size_t end = before_.size();
  if (!greeted_) {
    const size_t newline = before_.rfind('\n');
    end = newline == std::string::npos || newline < taken_ ? taken_ : newline + 1;
  }
  std::string text = before_.substr(taken_, end - taken_);
  taken_ = end;
  return text;
}

Result<std::optional<AgentMessage>> AgentFrameReader::Next() {
  if (!greeted_) {
    if (before_.size() > kMaxBeforeGreeting) {
      return Status::InvalidArgument(
          "the remote command printed " + std::to_string(before_.size()) +
          " bytes without hvd-agent's greeting (a login script's output, or not hvd-agent of "
          "this build?); it began: '" +
          Printable(before_, 200) + "'");
    }
    return std::optional<AgentMessage>();
  }
  HVD_ASSIGN_OR_RETURN(std::optional<std::string> body, splitter_.Next());
  if (!body) return std::optional<AgentMessage>();
  Result<AgentMessage> message = DecodeAgentFrame(*body);
  if (!message.ok()) return message.status();
  const bool is_ready = std::holds_alternative<AgentReady>(*message);
  if (is_ready != first_) {
    return Status::InvalidArgument(first_ ? "hvd-agent did not start with a ready frame"
                                          : "hvd-agent sent a second ready frame");
  }
  first_ = false;
  return std::optional<AgentMessage>(std::move(*message));
}

}  // namespace hvd::launcher
