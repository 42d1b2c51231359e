#ifndef HVD_LAUNCHER_REMOTE_PROTOCOL_H_
#define HVD_LAUNCHER_REMOTE_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "common/job_key.h"
#include "common/status.h"

// The launcher <-> hvd-agent protocol, spoken over the stdin of the agent's SSH channel.
//
// hvdrun runs `exec '<agent_path>'` as the remote command, so nothing about the rank (argv,
// environment, job key) appears on any command line. It then writes frames to the channel:
//
//   frame  := u32 big-endian body length | body          (length <= kMaxStartFrameBytes)
//   body   := u8 type | fields (common/byte_codec.h encoding)
//   Start  (type 1, exactly once, first): "HVDA" magic, u32 version, u32 argc, argc x bytes,
//          u32 envc, envc x (bytes name, bytes value), bytes cwd, u8 has_key, [32 raw key
//          bytes], u32 grace period in milliseconds
//   Signal (type 2): u32 signal number, delivered to the rank's process group
//
// End of stdin (the launcher closed the channel's write side, exited, or the connection
// dropped) means "terminate": SIGTERM to the process group, SIGKILL after the grace period.
// The agent writes nothing of its own to stdout: the rank's stdout and stderr reach the
// channel's stdout and stderr byte for byte (agent diagnostics go to stderr prefixed
// "hvd-agent: "), and the agent's exit reports the rank's: the same exit code, or the same
// fatal signal re-raised (sshd turns it into the channel's exit-signal).
namespace hvd::launcher {

inline constexpr uint32_t kAgentProtocolVersion = 1;
inline constexpr size_t kMaxStartFrameBytes = 16u << 20;  // argv + env of one rank
inline constexpr size_t kMaxControlFrameBytes = 64;

// What hvd-agent starts. `agent_path` is not sent: it is the remote command itself.
struct RemoteRankRequest {
  std::vector<std::string> argv;           // argv[0] is looked up in the merged PATH
  std::map<std::string, std::string> env;  // merged over the agent's own (login) environment
  std::string cwd;                         // "" = the remote login directory
  // Delivered through the channel; the agent puts it in a sealed memfd and names it in
  // HVD_SECRET_FD for the rank. Any HVD_SECRET_FD in `env` is dropped (a launcher-local fd
  // number means nothing remotely).
  std::optional<control::JobKey> job_key;
  double grace_period_s = 5;  // SIGTERM -> SIGKILL when the launcher goes away
  std::string agent_path;     // absolute path of hvd-agent on the remote host
};

struct AgentSignal {
  int signo = 0;
};

using AgentMessage = std::variant<RemoteRankRequest, AgentSignal>;

// Whole frames, length prefix included, ready to write to the channel.
std::string EncodeStartFrame(const RemoteRankRequest& request);
std::string EncodeSignalFrame(int signo);

// Parses one frame body (without the length prefix). Errors say what was malformed.
Result<AgentMessage> DecodeAgentFrameBody(std::string_view body);

// Splits a byte stream into frames. Feed bytes as they arrive; Next returns the next complete
// message, nullopt when more bytes are needed, or an error for an oversized or malformed
// frame (after which the stream is unusable). The first frame may be up to
// kMaxStartFrameBytes, later ones up to kMaxControlFrameBytes. Not synchronized.
class AgentFrameReader {
 public:
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  Result<std::optional<AgentMessage>> Next();
  // Bytes received but not yet part of a complete frame.
  size_t buffered() const { return buffer_.size(); }

 private:
  std::string buffer_;
  bool first_ = true;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_REMOTE_PROTOCOL_H_
