#ifndef HVD_LAUNCHER_AGENTS_AGENT_PROTOCOL_H_
#define HVD_LAUNCHER_AGENTS_AGENT_PROTOCOL_H_

#include <chrono>
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

// The launcher <-> hvd-agent protocol (version 4). One hvd-agent runs per remote host and
// supervises every rank hvdrun places there; it is the remote command of one SSH session
// (`exec '<agent_path>'`) or the one task of one srun step. Nothing about the job (argv,
// environment, job key) is on any command line: it all travels as frames on the agent's
// stdin, and the agent answers with frames on its stdout. The agent's stderr carries only its
// own diagnostics (text lines "hvd-agent: ..."), which hvdrun prints naming the host.
//
//   frame := u32 big-endian body length | body
//   body  := u8 type | fields (common/byte_codec.h encoding: big-endian integers, bytes =
//            u32 length + raw bytes)
//
// Launcher -> agent (stdin):
//   Hello     (1, exactly once, first): "HVDA", u32 version, u8 has_key, [32 raw key bytes],
//             u32 grace ms, u32 heartbeat interval ms, u32 heartbeat timeout ms (0 = none),
//             bytes cwd ("" = the login directory)
//   Start     (2): u32 id, u32 argc, argc x bytes, u32 envc, envc x (bytes name, bytes value)
//   Signal    (3): u32 id, u32 signo            -> SignalRankGroup(rank, signo)
//   Stop      (4): u32 id                       -> SIGTERM to its group, SIGKILL after grace
//   Heartbeat (5): nothing
// Agent -> launcher (stdout):
//   Ready     (129, first): "HVDA", u32 version, bytes hostname, u32 agent pid
//   Started   (130): u32 id, u32 pid
//   Output    (131): u32 id, u8 stream (1 stdout, 2 stderr), bytes data
//   Exit      (132): u32 id, u32 waitpid() status (W_EXITCODE(125|126|127, 0) = never ran),
//             bytes kill cause ("" = none; at most kMaxKillCause bytes: why the host says a
//             rank killed by SIGKILL died, launcher/local/oom_kills.h)
//   Heartbeat (133): nothing
//
// Start, Signal and Stop may arrive at any time after Hello, so ranks can be added to and
// removed from a running host (elastic jobs). `id` names a rank within one agent session
// (hvdrun uses the global rank); an id may be reused once its Exit was sent. Every started id
// gets exactly one Exit, after all of its Output. Heartbeats flow both ways every interval;
// any bytes count as a sign of life, and a side that hears nothing for the timeout treats
// the other as gone (the agent then terminates every rank). End of the agent's stdin means
// "terminate every rank": SIGTERM to each group, SIGKILL after the grace period; the agent
// still reports their exits, then exits 0.
//
// No code-bearing format; a fixed schema per type; counts and lengths are capped before
// anything is allocated. A version mismatch is refused with "install the same hvd build on
// every host"; an agent of protocol version 1 (one rank per session) reads a later Hello
// as a start frame of the wrong version and says the same. Version 3 added the kill cause;
// version 4 the stack signal (a Signal of kStackSignal goes only to the rank's processes that
// dump their stacks on it, launcher/local/stack_dump.h, where an older agent would killpg it).
// Version 5: the agent's stdout starts with kAgentGreeting, and whatever comes before it is the
// remote login's own output (a ~/.bashrc that echoes, a module system's banner), shown to the
// user, not read as frames (until 2026-12-01 "Welc" was read as a frame length: "hvd-agent frame
// of 1466264675 bytes exceeds the limit"; horovodrun shows such text and runs).
namespace hvd::launcher {

inline constexpr uint32_t kAgentProtocolVersion = 5;
// What hvd-agent writes on its stdout before its first frame.
inline constexpr std::string_view kAgentGreeting{"\0hvd-agent greeting v5\0", 24};
// The most a login may print before the greeting: beyond, the session fails naming the text.
inline constexpr size_t kMaxBeforeGreeting = 64u << 10;
// A poll that returns this much past its timeout means this process was not running (stopped
// with its whole job: Slurm's suspend, a paused VM): both sides then count the other's silence
// from their own resume, not from before the stop.
inline constexpr std::chrono::milliseconds kStoppedSlack{1000};
// A Start frame holds one rank's argv and environment.
inline constexpr size_t kMaxLauncherFrameBytes = 16u << 20;
// Output frames carry at most kMaxOutputChunk bytes of data.
inline constexpr size_t kMaxOutputChunk = 64u << 10;
inline constexpr size_t kMaxAgentFrameBytes = kMaxOutputChunk + 64;
inline constexpr size_t kMaxKillCause = 1024;

struct AgentHello {
  std::optional<control::JobKey> job_key;  // the agent puts it in a sealed memfd
  double grace_period_s = 5;               // SIGTERM -> SIGKILL
  double heartbeat_interval_s = 1;
  double heartbeat_timeout_s = 0;  // 0 = no liveness check
  std::string cwd;                 // every rank's working directory; "" = login directory
};

// Starts rank `id` with `argv` (argv[0] looked up in the merged PATH) and `env` merged over
// the agent's own (login) environment. A launcher-side HVD_SECRET_FD in `env` is never sent:
// the agent names its own memfd.
struct AgentStart {
  uint32_t id = 0;
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
};
struct AgentSignal {
  uint32_t id = 0;
  int signo = 0;
};
struct AgentStop {
  uint32_t id = 0;
};
struct AgentHeartbeat {};

struct AgentReady {
  uint32_t version = kAgentProtocolVersion;
  std::string hostname;
  uint32_t pid = 0;
};
struct AgentStarted {
  uint32_t id = 0;
  uint32_t pid = 0;
};
struct AgentOutput {
  uint32_t id = 0;
  int stream = 1;  // 1 stdout, 2 stderr
  std::string data;
};
struct AgentExit {
  uint32_t id = 0;
  int wait_status = 0;
  std::string kill_cause;  // "" = none
};

using LauncherMessage =
    std::variant<AgentHello, AgentStart, AgentSignal, AgentStop, AgentHeartbeat>;
using AgentMessage = std::variant<AgentReady, AgentStarted, AgentOutput, AgentExit, AgentHeartbeat>;

// Whole frames, length prefix included.
std::string EncodeHello(const AgentHello& hello);
std::string EncodeStart(const AgentStart& start);
std::string EncodeSignal(uint32_t id, int signo);
std::string EncodeStop(uint32_t id);
std::string EncodeLauncherHeartbeat();
std::string EncodeReady(const AgentReady& ready);
std::string EncodeStarted(uint32_t id, uint32_t pid);
// Appends the frame to *out (the agent's output path builds frames in place).
void AppendOutput(uint32_t id, int stream, std::string_view data, std::string* out);
// A longer kill cause is cut to kMaxKillCause bytes.
std::string EncodeExit(uint32_t id, int wait_status, std::string_view kill_cause = {});
std::string EncodeAgentHeartbeat();

// Parse one frame body (without the length prefix). Errors say what was malformed.
Result<LauncherMessage> DecodeLauncherFrame(std::string_view body);
Result<AgentMessage> DecodeAgentFrame(std::string_view body);

// Splits a byte stream into frame bodies. Feed bytes as they arrive; Next returns the next
// complete body, nullopt when more bytes are needed, or an error for a frame longer than
// `max_frame_bytes` (after which the stream is unusable). Not synchronized.
class FrameSplitter {
 public:
  explicit FrameSplitter(size_t max_frame_bytes) : max_(max_frame_bytes) {}
  void Feed(std::string_view bytes) { buffer_.append(bytes); }
  Result<std::optional<std::string>> Next();
  size_t buffered() const { return buffer_.size() - pos_; }

 private:
  size_t max_;
  std::string buffer_;
  size_t pos_ = 0;  // consumed prefix of buffer_, dropped lazily
};

// Reads launcher frames in order and enforces that Hello comes first and only once.
class LauncherFrameReader {
 public:
  void Feed(std::string_view bytes) { splitter_.Feed(bytes); }
  Result<std::optional<LauncherMessage>> Next();

 private:
  FrameSplitter splitter_{kMaxLauncherFrameBytes};
  bool first_ = true;
};

// Reads agent frames in order and enforces that Ready comes first and only once.
// With `after_greeting`, what precedes kAgentGreeting is kept as text (TakeBeforeGreeting) and
// frames start after it: hvdrun's reading of a real agent's stdout.
class AgentFrameReader {
 public:
  AgentFrameReader() = default;
  explicit AgentFrameReader(bool after_greeting) : greeted_(!after_greeting) {}
  void Feed(std::string_view bytes);
  Result<std::optional<AgentMessage>> Next();
  // The complete lines that came before the greeting and were not taken yet (all of it once
  // the greeting came); what is held back may be the greeting's first bytes.
  std::string TakeBeforeGreeting();
  bool greeted() const { return greeted_; }
  // Everything before the greeting so far, taken or not (for an error at the stream's end).
  const std::string& before_greeting() const { return before_; }

 private:
  FrameSplitter splitter_{kMaxAgentFrameBytes};
  bool first_ = true;
  bool greeted_ = true;
  std::string pending_;  // not yet known to be before the greeting or part of it
  std::string before_;   // before the greeting
  size_t taken_ = 0;     // of before_, given out by TakeBeforeGreeting
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_AGENTS_AGENT_PROTOCOL_H_
