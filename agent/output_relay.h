#ifndef HVD_AGENT_OUTPUT_RELAY_H_
#define HVD_AGENT_OUTPUT_RELAY_H_

#include <poll.h>

#include <string>

namespace hvd::agent {

// Copies one non-blocking pipe (the rank's stdout or stderr) to one output descriptor (the
// agent's, i.e. the SSH channel) byte for byte, with backpressure: it reads again only
// after everything read so far was written. A failed output (EPIPE: the channel is gone)
// turns the relay into a sink that keeps draining the pipe, so the rank never blocks on a
// full pipe. Owns the input descriptor, not the output. Single-threaded.
class OutputRelay {
 public:
  OutputRelay() = default;
  OutputRelay(int in_fd, int out_fd) : in_fd_(in_fd), out_fd_(out_fd) {}
  ~OutputRelay() { CloseInput(); }
  OutputRelay(OutputRelay&& other) noexcept;
  OutputRelay& operator=(OutputRelay&& other) noexcept;

  // Fills the poll entry for what the relay waits on (fd -1 when nothing).
  void PreparePoll(pollfd* entry) const;
  // Reads and writes whatever can be done without blocking.
  void Pump();
  void CloseInput();

  bool input_open() const { return in_fd_ >= 0; }
  bool flushed() const { return pending_.empty(); }

 private:
  int in_fd_ = -1;
  int out_fd_ = -1;
  bool out_broken_ = false;
  std::string pending_;
};

}  // namespace hvd::agent

#endif  // HVD_AGENT_OUTPUT_RELAY_H_
