#include "launcher/agents/agent_session.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <utility>

#include "common/check.h"
#include "common/fd.h"
#include "launcher/agents/agent_session_core.h"

namespace hvd::launcher {
namespace {

// RankHandle of one rank of a session.
class SessionRankHandle : public RankHandle {
 public:
  SessionRankHandle(std::shared_ptr<AgentSession::Core> core, std::shared_ptr<RankSlot> slot)
      : core_(std::move(core)), slot_(std::move(slot)) {}

  int exit_event_fd() const override { return slot_->exit_event_fd; }
  std::optional<int> TryWait() override {
    std::lock_guard<std::mutex> lock(core_->mu);
    return slot_->status;
  }
  void Signal(int signo) override {
    {
      std::lock_guard<std::mutex> lock(core_->mu);
      if (slot_->status) return;
    }
    core_->Queue(EncodeSignal(slot_->id, signo));
  }
  void Close() override {
    {
      std::lock_guard<std::mutex> lock(core_->mu);
      if (slot_->status || slot_->stop_sent) return;
      slot_->stop_sent = true;
    }
    core_->Queue(EncodeStop(slot_->id));
  }
  std::string TransportError() const override {
    std::lock_guard<std::mutex> lock(core_->mu);
    return slot_->transport_error;
  }
  std::optional<std::string> KillCause() const override {
    std::lock_guard<std::mutex> lock(core_->mu);
    if (slot_->kill_cause.empty()) return std::nullopt;
    return slot_->kill_cause;
  }

 private:
  std::shared_ptr<AgentSession::Core> core_;
  std::shared_ptr<RankSlot> slot_;
};

}  // namespace

RankSlot::~RankSlot() {
  CloseFd(&exit_event_fd);
  for (int& fd : pipe_fds) CloseFd(&fd);
}

AgentSession::Core::Core(std::unique_ptr<AgentLink> l, Options o)
    : link(std::move(l)), options(std::move(o)) {
  wake_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  end_event_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  HVD_CHECK(wake_fd >= 0 && end_event_fd >= 0) << "eventfd: " << strerror(errno);
}

AgentSession::Core::~Core() {
  ::close(wake_fd);
  ::close(end_event_fd);
}

void AgentSession::Core::Wake() {
  uint64_t one = 1;
  ssize_t ignored = ::write(wake_fd, &one, sizeof(one));
  (void)ignored;
}

void AgentSession::Core::Queue(std::string frame) {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (ended || close_requested) return;
    queued += frame;
  }
  Wake();
}

Result<std::unique_ptr<AgentSession>> AgentSession::Open(std::unique_ptr<AgentLink> link,
                                                         Options options,
                                                         Clock::time_point deadline) {
  const std::string host = options.host;
  const std::string hello = EncodeHello(options.hello);
  auto core = std::make_shared<Core>(std::move(link), std::move(options));
  core->queued = hello;
  // The I/O thread takes no signals: hvdrun's stay with its signalfd, SIGPIPE becomes EPIPE.
  sigset_t all, previous;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &previous);
  core->thread = std::thread([raw = core.get()] { raw->Main(); });
  pthread_sigmask(SIG_SETMASK, &previous, nullptr);
  std::unique_ptr<AgentSession> session(new AgentSession(core));

  std::unique_lock<std::mutex> lock(core->mu);
  core->cv.wait_until(lock, deadline, [&] { return core->got_ready || core->ended; });
  if (core->got_ready && !core->ended) return session;
  std::string diag = core->early_diag;
  while (!diag.empty() && diag.back() == '\n') diag.pop_back();
  Status why =
      core->ended
          ? core->end_status
          : Status::Timeout("hvd-agent on " + host + " did not answer before the start timeout");
  core->abandon = true;  // no rank was started: nothing to wait for
  lock.unlock();
  core->Wake();
  session.reset();
  std::string message = why.message();
  if (!diag.empty()) message += "; its stderr: " + diag;
  return Status(why.code(), message);
}

AgentSession::~AgentSession() {
  Close();
  {
    std::unique_lock<std::mutex> lock(core_->mu);
    core_->cv.wait_for(lock, Millis(core_->options.hello.grace_period_s) + kCloseSlack,
                       [&] { return core_->ended || core_->abandon; });
    core_->abandon = true;
  }
  core_->Wake();
  if (core_->thread.joinable()) core_->thread.join();
  if (core_->lost) core_->link->GiveUp();
  core_->link.reset();  // disconnects SSH / reaps srun now; handles may live on
}

Result<SpawnedRank> AgentSession::StartRank(uint32_t id, const std::vector<std::string>& argv,
                                            const std::map<std::string, std::string>& env) {
  if (argv.empty()) return Status::InvalidArgument("no command to run on " + host());
  int out[2] = {-1, -1}, err[2] = {-1, -1};
  auto slot = std::make_shared<RankSlot>();
  slot->id = id;
  slot->exit_event_fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (slot->exit_event_fd < 0 || ::pipe2(out, O_CLOEXEC | O_NONBLOCK) != 0 ||
      ::pipe2(err, O_CLOEXEC | O_NONBLOCK) != 0) {
    Status error = Status::IoError(std::string("pipe2/eventfd: ") + strerror(errno));
    for (int fd : {out[0], out[1], err[0], err[1]}) {
      if (fd >= 0) ::close(fd);
    }
    return error;
  }
  slot->pipe_fds[0] = out[1];
  slot->pipe_fds[1] = err[1];
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    Status refused;
    if (core_->ended || core_->close_requested) {
      refused = Status::PreconditionFailed(
          "the hvd-agent session on " + host() + " has ended" +
          (core_->end_status.ok() ? std::string() : ": " + core_->end_status.message()));
    } else if (core_->running.count(id) > 0) {
      refused = Status::InvalidArgument("rank " + std::to_string(id) + " is already running on " +
                                        host());
    }
    if (!refused.ok()) {
      ::close(out[0]);
      ::close(err[0]);
      return refused;
    }
    core_->running[id] = slot;
    core_->queued += EncodeStart(AgentStart{id, argv, env});
  }
  core_->Wake();
  SpawnedRank spawned;
  spawned.stdout_fd = out[0];
  spawned.stderr_fd = err[0];
  spawned.handle = std::make_unique<SessionRankHandle>(core_, std::move(slot));
  return spawned;
}

void AgentSession::Signal(uint32_t id, int signo) {
  if (core_->Running(id)) core_->Queue(EncodeSignal(id, signo));
}

void AgentSession::Stop(uint32_t id) {
  std::shared_ptr<RankSlot> slot = core_->Running(id);
  if (!slot) return;
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    if (slot->stop_sent) return;
    slot->stop_sent = true;
  }
  core_->Queue(EncodeStop(id));
}

void AgentSession::Close() {
  {
    std::lock_guard<std::mutex> lock(core_->mu);
    if (core_->close_requested) return;
    core_->close_requested = true;
  }
  core_->Wake();
}

const std::string& AgentSession::host() const { return core_->options.host; }

const AgentReady& AgentSession::ready() const { return core_->ready; }

int AgentSession::end_event_fd() const { return core_->end_event_fd; }

Status AgentSession::status() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->end_status;
}

bool AgentSession::ended() const {
  std::lock_guard<std::mutex> lock(core_->mu);
  return core_->ended || core_->close_requested;
}

std::shared_ptr<RankSlot> AgentSession::Core::Running(uint32_t id) {
  std::lock_guard<std::mutex> lock(mu);
  auto it = running.find(id);
  return it == running.end() ? nullptr : it->second;
}

}  // namespace hvd::launcher
