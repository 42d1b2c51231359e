#include "launcher/local/local_spawner.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <utility>

#include "launcher/local/child_process.h"
#include "launcher/local/exec_search.h"
#include "launcher/local/stack_dump.h"
#include "launcher/outcome/exit_codes.h"
#include "launcher/worker/cpu_binding.h"

namespace hvd::launcher {
namespace {

// The guardian's PR_SET_PDEATHSIG: a signal it can catch (with sigwaitinfo), unlike SIGKILL.
constexpr int kGuardianDeathSignal = SIGUSR1;

// Owns one descriptor.
class OwnedFd {
 public:
  OwnedFd() = default;
  explicit OwnedFd(int fd) : fd_(fd) {}
  ~OwnedFd() { Reset(); }
  OwnedFd(const OwnedFd&) = delete;
  OwnedFd& operator=(const OwnedFd&) = delete;
  int get() const { return fd_; }
  int Release() { return std::exchange(fd_, -1); }
  void Reset(int fd = -1) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

// Moves `fd` to a number >= 3, so the child's dup2 onto 0/1/2 cannot clobber it when
// hvdrun itself was started with a standard descriptor closed.
Status MoveAboveStdio(OwnedFd& fd) {
  if (fd.get() > 2) return Status::OK();
  int moved = ::fcntl(fd.get(), F_DUPFD_CLOEXEC, 3);
  if (moved < 0) return Status::IoError(std::string("fcntl(F_DUPFD_CLOEXEC): ") + strerror(errno));
  fd.Reset(moved);
  return Status::OK();
}

Status MakePipe(OwnedFd& read_end, OwnedFd& write_end) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0)
    return Status::IoError(std::string("pipe2: ") + strerror(errno));
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
  HVD_RETURN_IF_ERROR(MoveAboveStdio(read_end));
  return MoveAboveStdio(write_end);
}

// Ends the guardian the way the rank ended, so hvdrun's waitpid sees the rank's status.
[[noreturn]] void RelayStatus(int status) {
  if (WIFEXITED(status)) ::_exit(WEXITSTATUS(status));
  int signo = WTERMSIG(status);
  rlimit no_core = {0, 0};
  ::setrlimit(RLIMIT_CORE, &no_core);  // relaying SIGSEGV must not dump the guardian's core
  struct sigaction default_action = {};
  default_action.sa_handler = SIG_DFL;
  ::sigaction(signo, &default_action, nullptr);
  ::kill(::getpid(), signo);
  sigset_t only;
  sigemptyset(&only);
  sigaddset(&only, signo);
  ::sigprocmask(SIG_UNBLOCK, &only, nullptr);
  ::_exit(kExitSignalBase + signo);  // not reached for a fatal signal
}

// Runs in the forked child, the rank's guardian and process-group leader: async-signal-safe
// calls only. It forks the rank, tells hvdrun the rank's pid through `pid_fd` (the process
// the kernel's OOM killer would name: launcher/local/oom_kills.h), keeps no descriptor, and
// waits with every signal blocked (hvdrun's SIGTERM to the group reaches the rank, not the
// guardian). When hvdrun dies the guardian gets kGuardianDeathSignal and SIGKILLs the whole
// group, so even processes the rank started do not outlive hvdrun; when the rank ends it
// relays the rank's status.
[[noreturn]] void RunGuardian(const ChildPlan& plan, pid_t hvdrun, int pid_fd) {
  ::setpgid(0, 0);
  sigset_t all;
  sigfillset(&all);
  ::sigprocmask(SIG_SETMASK, &all, nullptr);
  if (::prctl(PR_SET_PDEATHSIG, kGuardianDeathSignal) != 0 || ::getppid() != hvdrun) {
    ::_exit(kExitParentGone);
  }
  ::prctl(PR_SET_NAME, "hvdrun-guard");  // how ps/top show it (argv stays hvdrun's)
  pid_t guardian = ::getpid();
  pid_t rank = ::_Fork();
  if (rank == 0) RunChild(plan, guardian);
  if (rank < 0) {
    int error = errno;
    ssize_t ignored = ::write(plan.error_fd, &error, sizeof(error));
    (void)ignored;
    ::_exit(kExitNotExecutable);
  }
  ssize_t written = ::write(pid_fd, &rank, sizeof(rank));
  (void)written;
  CloseAllDescriptors();
  sigset_t waited;
  sigemptyset(&waited);
  sigaddset(&waited, SIGCHLD);
  sigaddset(&waited, kGuardianDeathSignal);
  while (true) {
    int signo = ::sigwaitinfo(&waited, nullptr);
    if (signo == kGuardianDeathSignal) {
      ::kill(-guardian, SIGKILL);
      ::_exit(kExitParentGone);
    }
    int status = 0;
    if (signo == SIGCHLD && ::waitpid(rank, &status, WNOHANG) == rank) RelayStatus(status);
  }
}

Status SetNonBlocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) {
    return Status::IoError(std::string("fcntl(O_NONBLOCK): ") + strerror(errno));
  }
  return Status::OK();
}

// The descriptors of one rank: parent ends are non-blocking where the event loop uses them;
// everything is close-on-exec and above the standard descriptors.
struct RankPipes {
  OwnedFd out_read, out_write, err_read, err_write, exec_read, exec_write, in_read, in_write;
  OwnedFd pid_read, pid_write;  // the guardian's report of the rank's pid

  Status Open(bool stdin_pipe) {
    HVD_RETURN_IF_ERROR(MakePipe(out_read, out_write));
    HVD_RETURN_IF_ERROR(MakePipe(err_read, err_write));
    HVD_RETURN_IF_ERROR(MakePipe(exec_read, exec_write));
    HVD_RETURN_IF_ERROR(MakePipe(pid_read, pid_write));
    HVD_RETURN_IF_ERROR(SetNonBlocking(out_read.get()));
    HVD_RETURN_IF_ERROR(SetNonBlocking(err_read.get()));
    if (stdin_pipe) {
      HVD_RETURN_IF_ERROR(MakePipe(in_read, in_write));
      return SetNonBlocking(in_write.get());
    }
    in_read.Reset(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (in_read.get() < 0) {
      return Status::IoError(std::string("open /dev/null: ") + strerror(errno));
    }
    return MoveAboveStdio(in_read);
  }

  // After fork: the child's ends belong to the child now.
  void CloseChildEnds() {
    out_write.Reset();
    err_write.Reset();
    exec_write.Reset();
    pid_write.Reset();
    in_read.Reset();
  }
};

}  // namespace

void SignalRankGroup(pid_t group, int signo) {
  if (signo == kStackSignal) {  // to the processes that dump their stacks on it, no other
    SignalStackDumpers(group);
    return;
  }
  ::kill(-group, signo);
  if (signo == SIGTERM) ::kill(-group, SIGCONT);
}

Result<SpawnedRank> LocalSpawner::Spawn(const SpawnRequest& request) {
  if (request.argv.empty()) return Status::InvalidArgument("no command to run");
  // The rank leads its own group when it has no guardian; otherwise it stays in the group
  // its guardian leads.
  ChildPlan plan(request.argv, request.env);
  plan.group = request.outlives_launcher ? ChildPlan::Group::kNewGroup : ChildPlan::Group::kParent;
  if (!request.outlives_launcher) {  // srun: its tasks run elsewhere, bound by their agent
    HVD_ASSIGN_OR_RETURN(plan.cpus, RankCpuSet(request.env, AllowedCpus(), request.machine_slot));
  }
  RankPipes pipes;
  HVD_RETURN_IF_ERROR(pipes.Open(request.stdin_pipe));
  plan.stdin_fd = pipes.in_read.get();
  plan.stdout_fd = pipes.out_write.get();
  plan.stderr_fd = pipes.err_write.get();
  plan.close_other_fds = true;
  plan.inherited_fd = request.inherited_fd;
  plan.error_fd = pipes.exec_write.get();
  const pid_t hvdrun = ::getpid();

  pid_t pid = ::fork();
  if (pid < 0) return Status::IoError(std::string("fork: ") + strerror(errno));
  if (pid == 0) {
    if (request.outlives_launcher) RunChild(plan, 0);
    RunGuardian(plan, hvdrun, pipes.pid_write.get());
  }
  ::setpgid(pid, pid);  // may fail with EACCES once the child has exec'd; it did it itself
  pipes.CloseChildEnds();

  SpawnedRank spawned;
  spawned.pid = pid;
  if (std::optional<int> error = ReadExecError(pipes.exec_read.get())) {
    spawned.exec_error = ExecErrorMessage(request.argv[0], *error);
    // The child is between its error report and _exit; reaping it here keeps job control
    // from signalling it (it would then die of SIGTERM instead of exiting 127/126).
    while (::waitpid(pid, &spawned.exec_wait_status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!request.outlives_launcher) {
    // Written by the guardian right after its fork, before it closes its descriptors (end of
    // file when it never forked).
    pid_t rank = -1;
    ssize_t n;
    do {
      n = ::read(pipes.pid_read.get(), &rank, sizeof(rank));
    } while (n < 0 && errno == EINTR);
    if (n == static_cast<ssize_t>(sizeof(rank)) && rank > 0) spawned.rank_pid = rank;
  } else {
    spawned.rank_pid = pid;
  }
  spawned.stdout_fd = pipes.out_read.Release();
  spawned.stderr_fd = pipes.err_read.Release();
  spawned.stdin_fd = pipes.in_write.Release();
  return spawned;
}

}  // namespace hvd::launcher
