#ifndef HVD_LAUNCHER_OUTPUT_STDIN_PUMP_H_
#define HVD_LAUNCHER_OUTPUT_STDIN_PUMP_H_

#include <poll.h>

#include <optional>
#include <string>

namespace hvd::launcher {

// Copies hvdrun's stdin into rank 0's stdin pipe, one buffer at a time, driven by the job
// controller's poll loop (it never blocks). Rank 0 gets a pipe rather than hvdrun's own
// descriptor because it runs in its own process group: reading a terminal from there would
// stop it with SIGTTIN.
//
// The sink is closed at end of input, when rank 0 stops reading (EPIPE; SIGPIPE is blocked
// and drained by SignalChannel), or by Close() when rank 0 exits. Not synchronized.
class StdinPump {
 public:
  // Owns `sink_fd` (non-blocking); borrows `source_fd`.
  StdinPump(int source_fd, int sink_fd) : source_fd_(source_fd), sink_fd_(sink_fd) {}
  ~StdinPump() { Close(); }
  StdinPump(const StdinPump&) = delete;
  StdinPump& operator=(const StdinPump&) = delete;

  // What to poll for now: the source when the buffer is empty, else the sink; nullopt once
  // closed.
  std::optional<pollfd> Interest() const;
  // Acts on the revents of the pollfd Interest() returned.
  void OnReady();
  void Close();

 private:
  void ReadSource();
  void WriteSink();

  int source_fd_;
  int sink_fd_;
  std::string buffer_;
  size_t offset_ = 0;  // bytes of buffer_ already written
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_OUTPUT_STDIN_PUMP_H_
