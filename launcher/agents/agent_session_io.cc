// AgentSession's I/O thread: the only reader and writer of the link's descriptors and of the
// ranks' pipe write ends.
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <variant>
#include <vector>

#include "common/printable.h"
#include "launcher/agents/agent_session_core.h"
#include "launcher/output/console.h"

namespace hvd::launcher {
namespace {

constexpr int kLostExitCode = 255;  // what ssh(1) exits with when the connection is lost
// Bytes read from the agent per wake-up before the pipes get a turn.
constexpr size_t kReadBudget = size_t{1} << 20;
constexpr size_t kMaxEarlyDiag = 4096;
// The longest diagnostic line kept whole: a remote tool writing without newlines has its output
// cut into lines of this size, so the buffer stays bounded and each read scans at most this.
constexpr size_t kMaxDiagLine = 64 << 10;
// How long the agent's stderr may still trickle in after its stdout ended.
constexpr std::chrono::milliseconds kDiagDrainTime{500};
// How long an ending session keeps writing the output it holds for its ranks (job control's
// forwarder reads the pipes on another thread): up to 256 KiB a rank.
constexpr std::chrono::milliseconds kEndFlushTime{2000};

}  // namespace

void AgentSession::Core::Main() {
  last_heard = next_heartbeat = Clock::now();
  while (Step(Clock::now())) {
  }
}

// One turn of the loop; false once the session has ended.
bool AgentSession::Core::Step(Clock::time_point now) {
  bool close_now, abandon_now;
  {
    std::lock_guard<std::mutex> lock(mu);
    outgoing += queued;
    queued.clear();
    close_now = close_requested;
    abandon_now = abandon;
  }
  uint64_t drained;
  while (::read(wake_fd, &drained, sizeof(drained)) > 0) {
  }
  if (abandon_now) {
    End(Status::Aborted("gave up waiting for hvd-agent on " + options.host + " to end"));
    return false;
  }
  const AgentHello& hello = options.hello;
  if (hello.heartbeat_interval_s > 0 && !to_agent_closed && now >= next_heartbeat) {
    outgoing += EncodeLauncherHeartbeat();
    next_heartbeat = now + Millis(hello.heartbeat_interval_s);
  }
  while (!outgoing.empty() && !to_agent_closed) {
    ssize_t n = ::write(link->to_agent_fd(), outgoing.data(), outgoing.size());
    if (n > 0) {
      outgoing.erase(0, static_cast<size_t>(n));
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && errno == EAGAIN) {
      break;
    } else {
      to_agent_closed = true;  // the agent's stdin is gone; its stdout's end tells why
      outgoing.clear();
    }
  }
  if (close_now && outgoing.empty() && !to_agent_closed) {
    link->CloseToAgent();
    to_agent_closed = true;
  }
  FlushPipes();
  bool backpressured = false;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [id, slot] : running) {
      backpressured = backpressured || slot->pending[0].size() + slot->pending[1].size() >
                                           AgentSession::kPipeHighWater;
    }
  }
  if (got_ready && hello.heartbeat_timeout_s > 0) {
    if (backpressured) {
      last_heard = now;  // holding back is our choice, not the agent's silence
    } else if (now - last_heard > Millis(hello.heartbeat_timeout_s)) {
      lost = true;
      End(Status::IoError(
          "host " + options.host + " lost: no sign of life from its hvd-agent for " +
          SecondsText(hello.heartbeat_timeout_s) + " (HVD_HEARTBEAT_TIMEOUT_SECONDS)"));
      return false;
    }
  }
  PollOnce(now, backpressured);
  if (diag_open) ReadDiag();
  if (!backpressured && !ReadAgent()) return false;
  return true;
}

void AgentSession::Core::PollOnce(Clock::time_point now, bool backpressured) {
  std::vector<pollfd> fds;
  fds.push_back({wake_fd, POLLIN, 0});
  fds.push_back({backpressured ? -1 : link->from_agent_fd(), POLLIN, 0});
  fds.push_back({diag_open ? link->diag_fd() : -1, POLLIN, 0});
  fds.push_back({!outgoing.empty() && !to_agent_closed ? link->to_agent_fd() : -1, POLLOUT, 0});
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [id, slot] : running) {
      for (int which = 0; which < 2; ++which) {
        if (!slot->pending[which].empty() && slot->pipe_fds[which] >= 0) {
          fds.push_back({slot->pipe_fds[which], POLLOUT, 0});
        }
      }
    }
  }
  Clock::time_point wake = Clock::time_point::max();
  const AgentHello& hello = options.hello;
  if (hello.heartbeat_interval_s > 0 && !to_agent_closed) wake = next_heartbeat;
  if (got_ready && hello.heartbeat_timeout_s > 0) {
    wake = std::min(wake,
                    last_heard + Millis(hello.heartbeat_timeout_s) + std::chrono::milliseconds(1));
  }
  int timeout_ms = -1;
  if (wake != Clock::time_point::max()) {
    auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(wake - now).count();
    timeout_ms = static_cast<int>(std::clamp<int64_t>(ms + 1, 0, 60000));
  }
  int rc;
  do {
    rc = ::poll(fds.data(), fds.size(), timeout_ms);
  } while (rc < 0 && errno == EINTR);
  // Back from a poll much longer than asked for, this process was not running (stopped with
  // its whole job: Slurm's suspend, a paused VM): the agent's silence counts from now, its
  // heartbeats come once it runs again (until 2026-12-01 each side took the other for dead).
  if (timeout_ms >= 0 &&
      Clock::now() - now > std::chrono::milliseconds(timeout_ms) + kStoppedSlack) {
    last_heard = std::max(last_heard, Clock::now());
  }
}

// Reads what the agent sent; false once its stream has ended (the session is then over).
bool AgentSession::Core::ReadAgent() {
  char buffer[65536];
  size_t total = 0;
  while (total < kReadBudget) {
    ssize_t n = ::read(link->from_agent_fd(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      DrainDiag();  // the agent's last words, e.g. why it could not start
      std::string why = link->EndReason();
      if (!reader.greeted() && !reader.before_greeting().empty()) {
        why += "; before it ended the remote command printed (no hvd-agent greeting): '" +
               Printable(reader.before_greeting(), 300) + "'";
      }
      bool clean;
      {
        std::lock_guard<std::mutex> lock(mu);
        clean = close_requested && running.empty();
      }
      End(clean ? Status::OK() : Status::IoError("lost hvd-agent on " + options.host + ": " + why));
      return false;
    }
    total += static_cast<size_t>(n);
    last_heard = Clock::now();
    reader.Feed(std::string_view(buffer, static_cast<size_t>(n)));
    ShowLoginOutput();
    for (;;) {
      Result<std::optional<AgentMessage>> next = reader.Next();
      if (!next.ok()) {
        End(Status::IoError("hvd-agent on " + options.host + ": " + next.status().message()));
        return false;
      }
      if (!next->has_value()) break;
      OnMessage(std::move(**next));
    }
    FlushPipes();
  }
  return true;
}

// What the remote login printed on stdout before hvd-agent's greeting (a ~/.bashrc's echo, a
// banner): the user's own text, shown as the agent's stderr lines are, not read as frames.
// At most kMaxLoginLines of it: a login that prints on and on ends the session at 64 KiB.
void AgentSession::Core::ShowLoginOutput() {
  constexpr int kMaxLoginLines = 20;
  std::string text = reader.TakeBeforeGreeting();
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = Printable(std::string_view(text).substr(start, end - start), 4096);
    if (!line.empty() && ++login_lines <= kMaxLoginLines) {
      PrintToUser(options.host + ": " + line);
    } else if (!line.empty() && login_lines == kMaxLoginLines + 1) {
      PrintToUser(options.host + ": ... (more output of the remote login, not shown)");
    }
    start = end + 1;
  }
}

void AgentSession::Core::ReadDiag() {
  char buffer[4096];
  for (;;) {
    ssize_t n = ::read(link->diag_fd(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      diag_open = false;
      if (!diag_partial.empty()) diag_partial += '\n';
    } else {
      diag_partial.append(buffer, static_cast<size_t>(n));
    }
    size_t end;
    while ((end = diag_partial.find('\n')) != std::string::npos ||
           diag_partial.size() >= kMaxDiagLine) {
      const bool cut = end == std::string::npos || end > kMaxDiagLine;
      if (cut) end = kMaxDiagLine;
      std::string line = diag_partial.substr(0, end);
      diag_partial.erase(0, cut ? end : end + 1);
      if (cut) line += " ... (line cut at 64 KiB)";
      bool print;
      {
        std::lock_guard<std::mutex> lock(mu);
        print = got_ready;
        if (!print && early_diag.size() < kMaxEarlyDiag) early_diag += line + "\n";
      }
      if (print) PrintToUser(options.host + ": " + line);
    }
    if (n <= 0) break;
  }
}

void AgentSession::Core::DrainDiag() {
  Clock::time_point deadline = Clock::now() + kDiagDrainTime;
  while (diag_open && Clock::now() < deadline) {
    pollfd p = {link->diag_fd(), POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left.count()))) <= 0) break;
    ReadDiag();
  }
}

void AgentSession::Core::OnMessage(AgentMessage message) {
  if (auto* output = std::get_if<AgentOutput>(&message)) {
    OnOutput(std::move(*output));
  } else if (auto* exit = std::get_if<AgentExit>(&message)) {
    std::shared_ptr<RankSlot> slot = Running(exit->id);
    if (!slot) return;
    slot->exit_received = exit->wait_status;
    slot->exit_cause = std::move(exit->kill_cause);
    FlushSlot(*slot);
  } else if (auto* r = std::get_if<AgentReady>(&message)) {
    std::lock_guard<std::mutex> lock(mu);
    ready = *r;
    got_ready = true;
    cv.notify_all();
  }
  // Started and Heartbeat: reading them was the point.
}

void AgentSession::Core::OnOutput(AgentOutput output) {
  std::shared_ptr<RankSlot> slot = Running(output.id);
  if (!slot) return;
  const int which = output.stream == 1 ? 0 : 1;
  if (slot->pipe_fds[which] < 0) return;  // its reader is gone
  slot->pending[which] += output.data;
}

void AgentSession::Core::FlushPipes() {
  std::vector<std::shared_ptr<RankSlot>> slots;
  {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [id, slot] : running) slots.push_back(slot);
  }
  for (const auto& slot : slots) FlushSlot(*slot);
}

// Writes the slot's pending output; once its Exit arrived and nothing is pending, finishes it.
void AgentSession::Core::FlushSlot(RankSlot& slot) {
  for (int which = 0; which < 2; ++which) {
    std::string& pending = slot.pending[which];
    int& fd = slot.pipe_fds[which];
    while (!pending.empty() && fd >= 0) {
      ssize_t n = ::write(fd, pending.data(), pending.size());
      if (n > 0) {
        pending.erase(0, static_cast<size_t>(n));
      } else if (n < 0 && errno == EINTR) {
        continue;
      } else if (n < 0 && errno == EAGAIN) {
        break;
      } else {  // EPIPE: job control closed the read end
        ::close(fd);
        fd = -1;
      }
    }
    if (fd < 0) pending.clear();
  }
  if (slot.exit_received && slot.pending[0].empty() && slot.pending[1].empty()) {
    Finish(slot, *slot.exit_received, "");
  }
}

void AgentSession::Core::Finish(RankSlot& slot, int wait_status, const std::string& transport) {
  for (int& fd : slot.pipe_fds) {  // EOF for job control's reader
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
  std::lock_guard<std::mutex> lock(mu);
  if (slot.status) return;
  slot.status = wait_status;
  slot.transport_error = transport;
  slot.kill_cause = slot.exit_cause;
  running.erase(slot.id);
  uint64_t one = 1;
  ssize_t ignored = ::write(slot.exit_event_fd, &one, sizeof(one));
  (void)ignored;
}

// The session is over: every rank still running ends with kLostExitCode and `why`. The session
// is marked ended (status() says why, end_event_fd is readable, StartRank refuses) before the
// first rank is finished, so that a caller woken by a rank's end already sees why, and no rank
// can start after the ranks to finish were taken.
void AgentSession::Core::End(Status why) {
  std::vector<std::shared_ptr<RankSlot>> slots;
  const std::string lost =
      why.ok() ? "hvd-agent on " + options.host + " ended first" : why.message();
  {
    std::lock_guard<std::mutex> lock(mu);
    ended = true;
    end_status = std::move(why);
    for (const auto& [id, slot] : running) slots.push_back(slot);
    uint64_t one = 1;
    ssize_t ignored = ::write(end_event_fd, &one, sizeof(one));
    (void)ignored;
  }
  // What the ranks wrote and the session still holds (their pipes toward job control were full)
  // goes out first, for a bounded time: until 2026-12-01 an agent that ended on its own (killed,
  // its heartbeat timed out, an elastic host retired) took up to 256 KiB of each rank's last
  // output with it, often the traceback.
  const Clock::time_point deadline = Clock::now() + kEndFlushTime;
  for (;;) {
    std::vector<pollfd> waits;
    for (const auto& slot : slots) {
      for (int which = 0; which < 2; ++which) {
        if (!slot->pending[which].empty() && slot->pipe_fds[which] >= 0) {
          waits.push_back({slot->pipe_fds[which], POLLOUT, 0});
        }
      }
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (waits.empty() || left <= 0) break;
    if (::poll(waits.data(), waits.size(), static_cast<int>(left)) < 0 && errno != EINTR) break;
    for (const auto& slot : slots) FlushSlot(*slot);  // finishes a rank whose Exit came
  }
  for (const auto& slot : slots) {
    if (slot->exit_received) {
      Finish(*slot, *slot->exit_received, "");
    } else {
      Finish(*slot, W_EXITCODE(kLostExitCode, 0), lost);
    }
  }
  std::lock_guard<std::mutex> lock(mu);
  cv.notify_all();
}

}  // namespace hvd::launcher
