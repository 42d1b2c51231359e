#include "launcher/output/output_forwarder.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <ctime>
#include <filesystem>
#include <system_error>

#include "common/check.h"

namespace hvd::launcher {
namespace {

constexpr size_t kTailLineLimit = 512;

// A line longer than this is cut there on the console (the file gets the raw bytes): output
// without line ends is not held without limit (300 MB of it took 596 MB until 2026-12-02).
constexpr size_t kMaxLineBytes = size_t{1} << 20;

// Horovod's time.asctime() form, "Sun Nov  2 04:18:34 2026".
std::string AscTimeNow() {
  std::time_t now = std::time(nullptr);
  std::tm local = {};
  localtime_r(&now, &local);
  char buf[64] = {};
  std::strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S %Y", &local);
  return buf;
}

Result<int> OpenOutputFile(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    return Status::IoError("cannot create output file '" + path.string() + "': " + strerror(errno));
  }
  return fd;
}

}  // namespace

OutputForwarder::OutputForwarder(Options options)
    : options_(std::move(options)),
      ranks_(static_cast<size_t>(options_.size)),
      stdout_(options_.stdout_fd),
      stderr_(options_.stderr_fd) {}

OutputForwarder::~OutputForwarder() {
  for (auto& rank : ranks_) {
    for (Channel* channel : {&rank.out, &rank.err}) {
      if (channel->file_fd >= 0) ::close(channel->file_fd);
    }
  }
}

std::string OutputForwarder::RankDirName(int rank, int size) {
  size_t width = std::to_string(size > 0 ? size - 1 : 0).size();
  std::string number = std::to_string(rank);
  if (number.size() < width) number.insert(0, width - number.size(), '0');
  return "rank." + number;
}

Status OutputForwarder::OpenFiles() { return OpenFilesFrom(0); }

Status OutputForwarder::Grow(int size) {
  if (size <= options_.size) return Status::OK();
  const int first = options_.size;
  ranks_.resize(static_cast<size_t>(size));
  options_.size = size;
  return OpenFilesFrom(first);
}

Status OutputForwarder::OpenFilesFrom(int first) {
  if (options_.output_dir.empty()) return Status::OK();
  const int width_size = std::max(options_.size, options_.name_width_size);
  for (int rank = first; rank < options_.size; ++rank) {
    std::filesystem::path dir =
        std::filesystem::path(options_.output_dir) / RankDirName(rank, width_size);
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    if (ec) {
      return Status::IoError("cannot create output directory '" + dir.string() +
                             "': " + ec.message());
    }
    RankChannels& channels = ranks_[static_cast<size_t>(rank)];
    HVD_ASSIGN_OR_RETURN(channels.out.file_fd, OpenOutputFile(dir / "stdout"));
    HVD_ASSIGN_OR_RETURN(channels.err.file_fd, OpenOutputFile(dir / "stderr"));
    channels.out.file_path = (dir / "stdout").string();
    channels.err.file_path = (dir / "stderr").string();
  }
  return Status::OK();
}

void OutputForwarder::FileFailed(int rank, Stream stream, Channel& channel, int error) {
  ::close(channel.file_fd);
  channel.file_fd = -1;
  const std::string line = "hvdrun: cannot write rank " + std::to_string(rank) + "'s " +
                           (stream == Stream::kStdout ? "stdout" : "stderr") + " to '" +
                           channel.file_path + "': " + strerror(error) +
                           "; the file ends there, and the rest of that output goes to this "
                           "console only\n";
  stderr_.Write(line);
}

OutputForwarder::Channel& OutputForwarder::ChannelOf(int rank, Stream stream) {
  HVD_CHECK(rank >= 0 && rank < options_.size) << "rank " << rank << " of " << options_.size;
  RankChannels& channels = ranks_[static_cast<size_t>(rank)];
  return stream == Stream::kStdout ? channels.out : channels.err;
}

void OutputForwarder::Write(int rank, Stream stream, std::string_view bytes) {
  Channel& channel = ChannelOf(rank, stream);
  if (channel.file_fd >= 0) {
    if (int error = WriteWhole(channel.file_fd, bytes)) FileFailed(rank, stream, channel, error);
  }
  if (channel.cr_pending && !bytes.empty()) {
    // The previous read ended in '\r'; only now do we know whether it was half of "\r\n".
    channel.cr_pending = false;
    bool crlf = bytes.front() == '\n';
    EmitLine(rank, stream, channel.pending, crlf ? "\r\n" : "\r");
    channel.pending.clear();
    if (crlf) bytes.remove_prefix(1);
  }
  while (!bytes.empty()) {
    size_t end = bytes.find_first_of("\r\n");
    if (end == std::string_view::npos) {
      channel.pending.append(bytes);
      if (channel.pending.size() >= kMaxLineBytes) {
        EmitLine(rank, stream, channel.pending, "\n");
        channel.pending.clear();
      }
      return;
    }
    std::string_view head = bytes.substr(0, end);
    if (bytes[end] == '\r' && end + 1 == bytes.size()) {
      channel.pending.append(head);
      channel.cr_pending = true;
      return;
    }
    bool crlf = bytes[end] == '\r' && bytes[end + 1] == '\n';
    std::string_view terminator = crlf ? "\r\n" : bytes.substr(end, 1);
    if (channel.pending.empty()) {
      EmitLine(rank, stream, head, terminator);
    } else {
      channel.pending.append(head);
      EmitLine(rank, stream, channel.pending, terminator);
      channel.pending.clear();
    }
    bytes.remove_prefix(end + terminator.size());
  }
}

void OutputForwarder::Finish(int rank, Stream stream) {
  Channel& channel = ChannelOf(rank, stream);
  if (channel.pending.empty() && !channel.cr_pending) return;
  EmitLine(rank, stream, channel.pending, channel.cr_pending ? "\r\n" : "\n");
  channel.pending.clear();
  channel.cr_pending = false;
}

std::string OutputForwarder::Prefix(int rank, Stream stream) const {
  std::string prefix = options_.prefix_timestamp ? AscTimeNow() : std::string();
  prefix += "[" + std::to_string(rank) + "]";
  prefix += stream == Stream::kStdout ? "<stdout>:" : "<stderr>:";
  return prefix;
}

void OutputForwarder::EmitLine(int rank, Stream stream, std::string_view body,
                               std::string_view terminator) {
  if (OnConsole(rank, stream)) {
    std::string line = Prefix(rank, stream);
    line.reserve(line.size() + body.size() + terminator.size());
    line.append(body);
    line.append(terminator);
    (stream == Stream::kStdout ? stdout_ : stderr_).Write(std::move(line));
  }
  if (stream == Stream::kStderr) RememberStderrLine(rank, body);
}

bool OutputForwarder::console_closed() const { return stdout_.closed() || stderr_.closed(); }

bool OutputForwarder::backlogged() const { return ConsoleBacklogged(); }

bool OutputForwarder::OnConsole(int rank, Stream stream) const {
  if (options_.console_ranks.empty() ||
      std::binary_search(options_.console_ranks.begin(), options_.console_ranks.end(), rank)) {
    return true;
  }
  return stream == Stream::kStderr &&
         std::chrono::steady_clock::now() < ranks_[static_cast<size_t>(rank)].show_stderr_until;
}

void OutputForwarder::ShowStderrFor(int rank, std::chrono::steady_clock::duration duration) {
  if (rank < 0 || static_cast<size_t>(rank) >= ranks_.size()) return;
  ranks_[static_cast<size_t>(rank)].show_stderr_until = std::chrono::steady_clock::now() + duration;
}

void OutputForwarder::RememberStderrLine(int rank, std::string_view body) {
  if (options_.stderr_tail_lines == 0 || body.empty()) return;
  std::deque<std::string>& tail = ranks_[static_cast<size_t>(rank)].tail;
  std::string kept(body.substr(0, kTailLineLimit));
  if (body.size() > kTailLineLimit) kept += "...";
  tail.push_back(std::move(kept));
  while (tail.size() > options_.stderr_tail_lines) tail.pop_front();
}

std::vector<std::string> OutputForwarder::StderrTail(int rank) const {
  const std::deque<std::string>& tail = ranks_[static_cast<size_t>(rank)].tail;
  return {tail.begin(), tail.end()};
}

namespace {

constexpr size_t kReadChunk = 64 * 1024;
// Bounds the drain after a rank exits, in case something it left behind keeps writing.
constexpr int kMaxDrainReads = 256;

Stream StreamOf(int which) { return which == 0 ? Stream::kStdout : Stream::kStderr; }

}  // namespace

bool OutputForwarder::ReadPipe(int rank, int which, const int (&fds)[2]) {
  char buf[kReadChunk];
  while (true) {
    ssize_t n = ::read(fds[which], buf, sizeof(buf));
    if (n > 0) {
      Write(rank, StreamOf(which), std::string_view(buf, static_cast<size_t>(n)));
      return true;
    }
    if (n < 0 && errno == EINTR) continue;
    return n < 0 && errno == EAGAIN;
  }
}

void OutputForwarder::ClosePipe(int rank, int which, int (&fds)[2]) {
  if (fds[which] < 0) return;
  ::close(fds[which]);
  fds[which] = -1;
  Finish(rank, StreamOf(which));
}

void OutputForwarder::DrainAndClosePipes(int rank, int (&fds)[2]) {
  for (int which = 0; which < 2; ++which) {
    if (fds[which] < 0) continue;
    for (int i = 0; i < kMaxDrainReads; ++i) {
      pollfd p = {fds[which], POLLIN, 0};
      if (::poll(&p, 1, 0) <= 0 || !ReadPipe(rank, which, fds)) break;
    }
    ClosePipe(rank, which, fds);
  }
}

}  // namespace hvd::launcher
