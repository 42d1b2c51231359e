// Internal to launcher/agent_session*.cc: the state AgentSession shares between the caller's
// threads, its I/O thread and its rank handles.
#ifndef HVD_LAUNCHER_AGENTS_AGENT_SESSION_CORE_H_
#define HVD_LAUNCHER_AGENTS_AGENT_SESSION_CORE_H_

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "common/duration.h"
#include "launcher/agents/agent_session.h"

namespace hvd::launcher {

// One rank of a session. `exit_event_fd` and the fields marked "mu" are shared (under
// Core::mu); the rest belongs to the I/O thread.
struct RankSlot {
  uint32_t id = 0;
  int exit_event_fd = -1;  // eventfd, readable once `status` is set
  ~RankSlot();

  // I/O thread only.
  int pipe_fds[2] = {-1, -1};  // write ends of the rank's stdout / stderr pipes
  std::string pending[2];      // output not yet written to the pipes
  std::optional<int> exit_received;
  std::string exit_cause;  // the Exit frame's kill cause

  // mu
  std::optional<int> status;
  std::string transport_error;
  std::string kill_cause;
  bool stop_sent = false;
};

struct AgentSession::Core {
  using Clock = AgentSession::Clock;

  Core(std::unique_ptr<AgentLink> l, Options o);
  ~Core();

  // Caller threads.
  void Queue(std::string frame);  // no-op once ended or closed
  void Wake();

  // I/O thread (agent_session_io.cc).
  void Main();
  bool Step(Clock::time_point now);
  void PollOnce(Clock::time_point now, bool backpressured);
  bool ReadAgent();
  void ReadDiag();
  void ShowLoginOutput();
  void DrainDiag();
  void OnMessage(AgentMessage message);
  void OnOutput(AgentOutput output);
  void FlushPipes();
  void FlushSlot(RankSlot& slot);
  void Finish(RankSlot& slot, int wait_status, const std::string& transport_error);
  void End(Status why);
  std::shared_ptr<RankSlot> Running(uint32_t id);

  // Set before the I/O thread starts, then read-only (ready: until `got_ready`).
  std::unique_ptr<AgentLink> link;
  const Options options;
  AgentReady ready;
  int wake_fd = -1;
  int end_event_fd = -1;  // eventfd, written once by End()
  std::thread thread;

  mutable std::mutex mu;
  std::condition_variable cv;
  std::string queued;  // frames from the callers, for the I/O thread
  bool close_requested = false;
  bool abandon = false;
  bool got_ready = false;
  bool ended = false;
  Status end_status;
  std::string early_diag;  // the agent's stderr before Ready, for Open's error
  int login_lines = 0;     // lines of the remote login's own output shown (ShowLoginOutput)
  std::map<uint32_t, std::shared_ptr<RankSlot>> running;

  // I/O thread only.
  AgentFrameReader reader{true};  // after the greeting: before it is the login's own output
  std::string outgoing;
  bool to_agent_closed = false;
  bool lost = false;  // the heartbeat timed out: the agent cannot be reached
  bool diag_open = true;
  std::string diag_partial;
  Clock::time_point last_heard;
  Clock::time_point next_heartbeat;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_AGENTS_AGENT_SESSION_CORE_H_
