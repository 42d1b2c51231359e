#ifndef HVD_LAUNCHER_OUTPUT_OUTPUT_FORWARDER_H_
#define HVD_LAUNCHER_OUTPUT_OUTPUT_FORWARDER_H_

#include <chrono>
#include <cstddef>
#include <deque>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "launcher/output/console_sink.h"

namespace hvd::launcher {

enum class Stream { kStdout, kStderr };

// Turns each rank's raw stdout/stderr bytes into Horovod-style prefixed lines,
//   [<rank>]<stdout>:<line>\n        ("<asctime>[<rank>]<stdout>:..." with timestamps)
// on hvdrun's own stdout/stderr. A line ends at '\n', "\r\n" or a lone '\r' (the terminator
// is kept, so progress bars still redraw); a partial line waits for more bytes and is
// completed with '\n' by Finish (or cut at 1 MiB: output without line ends is not held
// without limit). Every output line is written whole so two ranks' bytes never share a line,
// and without waiting for a console that stalls (console_sink.h). Bytes pass through unchanged
// (UTF-8 sequences split across reads are reassembled because splitting only happens at '\n'/'\r').
//
// With an output directory, the raw bytes also go to <dir>/rank.<N>/{stdout,stderr}, N
// zero-padded to the width of size-1 (Horovod's layout). A file that cannot be written (a full
// disk) ends there: hvdrun says so once on its stderr, naming the file and the error, and
// writes nothing more to it (no gap in the middle when space comes back); the console still
// gets every line. Keeps the last few stderr lines of each rank for the failure summary.
//
// With console_ranks (--console-ranks), only those ranks' lines reach the console; the files
// and the stderr tails still get every rank's, and ShowStderrFor lets a rank's stderr through
// for a while (its stacks, which hvdrun asked for).
//
// Threading: not synchronized; the job controller calls it from its one event-loop thread.
class OutputForwarder {
 public:
  struct Options {
    int size = 1;
    bool prefix_timestamp = false;
    std::string output_dir;  // "" = console only
    int stdout_fd = 1;
    int stderr_fd = 2;
    // Kept for the failure summary (which shows the last 5) and its readers: enough for a
    // traceback's last frame before a message of several lines and a warning or two at exit.
    size_t stderr_tail_lines = 20;
    // Directory names are padded to the width of max(size, name_width_size) - 1, so a job
    // that grows (Grow) keeps one width.
    int name_width_size = 0;
    // The ranks whose lines go to the console, ascending; empty = every rank.
    std::vector<int> console_ranks;
  };

  explicit OutputForwarder(Options options);
  ~OutputForwarder();
  OutputForwarder(const OutputForwarder&) = delete;
  OutputForwarder& operator=(const OutputForwarder&) = delete;

  // Creates the per-rank files; a no-op without an output directory. Errors name the path.
  Status OpenFiles();
  // Makes room for ranks up to `size` - 1 (elastic jobs number their workers as they start
  // them) and creates their files.
  Status Grow(int size);

  // Forwards bytes a rank wrote to `stream`.
  void Write(int rank, Stream stream, std::string_view bytes);
  // The stream reached its end: flushes a pending partial line.
  void Finish(int rank, Stream stream);

  // A rank's output pipes as the event loops hold them: fds[0] its stdout, fds[1] its stderr,
  // non-blocking, -1 once closed. ReadPipe forwards what one read() of fds[which] returns and
  // is false at end of file or on an error (ClosePipe it then). ClosePipe closes fds[which]
  // if open, sets it to -1 and finishes the stream. DrainAndClosePipes, for a rank whose exit
  // status is known (so all it wrote is in the pipes), forwards what is left (a bounded number
  // of reads) and closes both.
  bool ReadPipe(int rank, int which, const int (&fds)[2]);
  void ClosePipe(int rank, int which, int (&fds)[2]);
  void DrainAndClosePipes(int rank, int (&fds)[2]);

  // `rank`'s stderr reaches the console for `duration` from now, console_ranks or not.
  void ShowStderrFor(int rank, std::chrono::steady_clock::duration duration);

  // The last stderr lines of `rank`, oldest first, each cut to a readable length.
  std::vector<std::string> StderrTail(int rank) const;

  // True once writing to hvdrun's stdout or stderr failed with EPIPE (its reader is gone).
  bool console_closed() const;
  // Too much waits to be written to a console that stalls (console_sink.h): the event loops
  // stop reading the ranks' pipes until it is written, and wake every kBackloggedPollMs to see.
  bool backlogged() const;
  static constexpr int kBackloggedPollMs = 20;

  // "rank.03" for rank 3 of 12.
  static std::string RankDirName(int rank, int size);

 private:
  struct Channel {
    std::string pending;      // bytes after the last line end
    bool cr_pending = false;  // `pending` ended with '\r', which may start "\r\n"
    int file_fd = -1;
    std::string file_path;  // for the message when writing it fails
  };
  struct RankChannels {
    Channel out;
    Channel err;
    std::deque<std::string> tail;
    std::chrono::steady_clock::time_point show_stderr_until;  // ShowStderrFor
  };

  Status OpenFilesFrom(int first);
  Channel& ChannelOf(int rank, Stream stream);
  // Writing `channel`'s file failed with `error`: close it and say so on hvdrun's stderr.
  void FileFailed(int rank, Stream stream, Channel& channel, int error);
  void EmitLine(int rank, Stream stream, std::string_view body, std::string_view terminator);
  void RememberStderrLine(int rank, std::string_view body);
  bool OnConsole(int rank, Stream stream) const;
  std::string Prefix(int rank, Stream stream) const;

  Options options_;
  std::vector<RankChannels> ranks_;
  const Console stdout_;  // options_.stdout_fd's and stderr_fd's, looked at once
  const Console stderr_;
};

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_OUTPUT_OUTPUT_FORWARDER_H_
