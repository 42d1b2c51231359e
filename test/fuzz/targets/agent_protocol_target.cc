// Target "agent_protocol": the hvd-agent protocol's byte streams through the readers that
// production feeds from its pipes (launcher/agents/agent_protocol.h): LauncherFrameReader is what
// hvd-agent runs on its stdin (bytes from whoever started it), AgentFrameReader what hvdrun
// runs on an agent's stdout (bytes from a remote host).
//
// Input: a mode byte (bit 0: which side reads; bits 1-7: the size of the pieces the stream is
// fed in, as a pipe's reads would cut it), then the stream. Reading stops at the first error,
// as both sides do. Each message read re-encodes to a frame that reads back to the same frame.
#include <variant>

#include "common/check.h"
#include "launcher/agents/agent_protocol.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

std::string Encode(const launcher::LauncherMessage& message) {
  struct Visitor {
    std::string operator()(const launcher::AgentHello& m) { return launcher::EncodeHello(m); }
    std::string operator()(const launcher::AgentStart& m) { return launcher::EncodeStart(m); }
    std::string operator()(const launcher::AgentSignal& m) {
      return launcher::EncodeSignal(m.id, m.signo);
    }
    std::string operator()(const launcher::AgentStop& m) { return launcher::EncodeStop(m.id); }
    std::string operator()(const launcher::AgentHeartbeat&) {
      return launcher::EncodeLauncherHeartbeat();
    }
  };
  return std::visit(Visitor{}, message);
}

std::string Encode(const launcher::AgentMessage& message) {
  struct Visitor {
    std::string operator()(const launcher::AgentReady& m) { return launcher::EncodeReady(m); }
    std::string operator()(const launcher::AgentStarted& m) {
      return launcher::EncodeStarted(m.id, m.pid);
    }
    std::string operator()(const launcher::AgentOutput& m) {
      std::string out;
      launcher::AppendOutput(m.id, m.stream, m.data, &out);
      return out;
    }
    std::string operator()(const launcher::AgentExit& m) {
      return launcher::EncodeExit(m.id, m.wait_status, m.kill_cause);
    }
    std::string operator()(const launcher::AgentHeartbeat&) {
      return launcher::EncodeAgentHeartbeat();
    }
  };
  return std::visit(Visitor{}, message);
}

// Encoding what was read, decoding that and encoding again gives the same frame.
template <typename Message, typename Decode>
void CheckReencodes(const Message& message, Decode decode) {
  const std::string frame = Encode(message);
  HVD_CHECK_GE(frame.size(), 4u);
  Result<Message> again = decode(std::string_view(frame).substr(4));
  HVD_CHECK(again.ok()) << "a re-encoded frame does not decode: " << again.status().message();
  HVD_CHECK(Encode(*again) == frame) << "a re-encoded frame does not read back the same";
}

template <typename Reader, typename Decode>
std::string ReadStream(FuzzInput& in, size_t piece, Decode decode) {
  Reader reader;
  std::string outcome;
  while (!in.empty()) {
    reader.Feed(in.Take(piece));
    for (;;) {
      auto next = reader.Next();
      if (!next.ok()) {
        Note(&outcome, next.status());
        return outcome;
      }
      if (!next->has_value()) break;
      CheckReencodes(**next, decode);
    }
  }
  return outcome;
}

}  // namespace

std::string FuzzAgentProtocol(std::string_view input) {
  FuzzInput in(input);
  const uint8_t mode = in.Byte();
  const size_t piece = (mode >> 1) + 1;
  if (mode & 1)
    return ReadStream<launcher::AgentFrameReader>(in, piece, launcher::DecodeAgentFrame);
  return ReadStream<launcher::LauncherFrameReader>(in, piece, launcher::DecodeLauncherFrame);
}

}  // namespace hvd::fuzz
