#ifndef HVD_LAUNCHER_OUTPUT_CONSOLE_SINK_H_
#define HVD_LAUNCHER_OUTPUT_CONSOLE_SINK_H_

#include <chrono>
#include <string>
#include <string_view>

// hvdrun's console: its stdout and stderr, written by the job's event loop (the ranks' lines,
// OutputForwarder) and by any thread (hvdrun's own lines, PrintToUser).
//
// A terminal or a pipe whose reader stops reading (a `| less` left at a page, Ctrl-S, a
// consumer that stalls) blocks write() for as long as it stays so. Written from the event
// loop, that stalled hvdrun whole: Ctrl-C, SIGTERM, --timeout and the ranks' exits went
// unhandled until the reader came back, and a signal that waited meanwhile then counted as a
// second one (every rank SIGKILLed; until 2026-12-02). So a console that can block is written
// by a thread of its own, from a queue, and a write here never waits for the reader: while
// more than kConsoleBacklogBytes wait, the event loops stop reading the ranks' pipes (the
// ranks then block on their own writes, as they would on that console without hvdrun) and
// keep handling everything else. A regular file (`> log`) cannot stall: it is written at once.
// The lines of hvdrun's stdout and stderr keep their order where both are one terminal or pipe.
namespace hvd::launcher {

inline constexpr size_t kConsoleBacklogBytes = size_t{4} << 20;

// Writes all of `data` to `fd` at once (a console, or a rank's --output-filename file); waits out
// EAGAIN where the descriptor was made non-blocking by someone else (a terminal shared with
// another program). Returns 0 or the failed write's errno.
int WriteWhole(int fd, std::string_view data);
// How long a job stopped by a signal (Ctrl-C, a scheduler's SIGTERM) waits for a stalled
// console to take its last lines before hvdrun exits without them.
inline constexpr std::chrono::milliseconds kStoppedFlush{2000};

// The queue and writer thread of one file that can stall (console_sink.cc).
struct ConsoleQueue;

// A console descriptor (1, 2, or a test's), its file looked at once, when made: the queue of a
// terminal, pipe or socket, shared by every Console of that file; a regular file has none and
// is written at once. OutputForwarder keeps one per stream, so a forwarded line costs no look
// at the file.
class Console {
 public:
  explicit Console(int fd);
  // Writes `text` whole, in order with every other write here to the same file. Returns at
  // once for a terminal, pipe or socket.
  void Write(std::string text) const;
  // A write failed with EPIPE: the reader is gone.
  bool closed() const;

 private:
  int fd_;
  ConsoleQueue* queue_;  // null: written at once
};

// Console(fd).Write(text), for a caller that writes now and then (PrintToUser).
void ConsoleWrite(int fd, std::string text);

// More than kConsoleBacklogBytes wait to be written to some console.
bool ConsoleBacklogged();

// Waits until everything queued is written, or at most `most`, or until SIGINT, SIGTERM or
// SIGHUP is pending (hvdrun blocks them and reads them from a signalfd, so a Ctrl-C while its
// last lines wait for a stalled reader ends the wait instead of doing nothing); then drops
// what is left, and every later write. It runs at exit, without a limit (a slow reader gets
// every line of a job that ended); a job stopped by a signal calls it first with a short one.
// `watch_signals` false: only `most` bounds the wait (a caller that exits because of a signal
// it left pending).
void ConsoleFlush(std::chrono::milliseconds most = std::chrono::hours(24),
                  bool watch_signals = true);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_OUTPUT_CONSOLE_SINK_H_
