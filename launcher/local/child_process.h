#ifndef HVD_LAUNCHER_LOCAL_CHILD_PROCESS_H_
#define HVD_LAUNCHER_LOCAL_CHILD_PROCESS_H_

#include <sched.h>
#include <sys/types.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace hvd::launcher {

// Exit code of a child whose parent was already gone when it asked for the death signal.
inline constexpr int kExitParentGone = 1;

// What a forked child does between fork and exec, written once for every program hvd starts:
// the local spawner's ranks and srun steps (launcher/local/local_spawner.h), mpirun under
// hvdrun --mpi (launcher/mpirun_launch.h) and hvd-agent's ranks (agent/rank_launch.h).
//
// The plan is built in the parent before fork (argv, envp and the PATH candidates included)
// and the child only reads it: RunChild calls async-signal-safe functions only and never
// allocates, because the parent may have other threads (hvdrun has) and a lock one of them
// held at fork stays held in the child.
//
// RunChild's steps, in this order, each as the plan asks:
//   1. a new process group (setpgid) or a new session (setsid), or the parent's group;
//   2. SIGKILL when the parent dies (PR_SET_PDEATHSIG); a child whose parent is already gone
//      (getppid() is no longer the pid it was forked from) exits kExitParentGone at once;
//   3. SIGPIPE back to its default action. Other dispositions are inherited on purpose: an
//      ignored SIGHUP stays ignored, as nohup expects;
//   4. an empty signal mask (hvdrun and hvd-agent block the signals they read from a
//      signalfd, and a mask survives exec);
//   5. the CPU binding (best effort: a mask the kernel refuses leaves the process unbound);
//   6. stdin, stdout and stderr onto the plan's descriptors;
//   7. every other descriptor but one marked close-on-exec, so the program inherits nothing
//      it was not meant to (a listening socket, another rank's pipe), as Python's
//      subprocess does;
//   8. the exec (see Search).
//
// Not copyable: argv and envp point into the plan's own strings.
struct ChildPlan {
  enum class Group {
    kParent,      // stays in the parent's process group
    kNewGroup,    // leads a new process group in the parent's session
    kNewSession,  // leads a new session (and process group)
  };
  enum class Search {
    // execve of each of `candidates` in turn. A file the kernel cannot execute (ENOEXEC: a
    // script without a #! line) runs under /bin/sh, as execvp and a shell run it (and
    // horovodrun, which starts the command through a shell), except a *.py file: sh would
    // read Python as shell, so that one is refused with a hint to name the interpreter. When
    // none runs, the errno (EACCES when some candidate existed but was not executable) is
    // written to `error_fd` and the child exits kExitNotFound (127) or kExitNotExecutable
    // (126), as a shell reports it.
    kCandidates,
    // execvpe over the parent's own PATH, exit 127 on any failure, nothing reported: how
    // hvdrun --mpi starts mpirun, which `mpirun --version` has just found on that PATH.
    kParentPath,
  };

  // `argv` (argv[0] names the program) and the program's complete environment, copied;
  // `candidates` is ExecCandidates(argv[0], env) (launcher/local/exec_search.h), execvp's
  // search over the program's own PATH.
  ChildPlan(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env);
  ChildPlan(const ChildPlan&) = delete;
  ChildPlan& operator=(const ChildPlan&) = delete;

  Group group = Group::kNewGroup;
  bool default_sigpipe = false;   // step 3
  std::optional<cpu_set_t> cpus;  // step 5: bind here (launcher/worker/cpu_binding.h)
  int stdin_fd = -1;              // step 6: -1 keeps the parent's
  int stdout_fd = -1;
  int stderr_fd = -1;
  bool close_other_fds = false;  // step 7
  int inherited_fd = -1;         // with close_other_fds: the one kept open (> 2), or -1
  Search search = Search::kCandidates;
  std::vector<std::string> candidates;
  int error_fd = -1;  // the write end of a close-on-exec pipe the parent reads (ReadExecError)

  // Null-terminated, for execve.
  char* const* argv() const { return argv_.data(); }
  // "/bin/sh", a slot for the script's path (filled in the child), argv[1..], null.
  char** sh_argv() const { return sh_argv_.data(); }
  char* const* envp() const { return envp_.data(); }

 private:
  std::vector<std::string> arg_storage_;
  std::vector<char*> argv_;
  mutable std::vector<char*> sh_argv_;
  std::string sh_ = "/bin/sh";
  std::vector<std::string> env_storage_;
  std::vector<char*> envp_;
};

// Runs in the forked child: the steps above, then the program; never returns. `parent` is
// the pid the child was forked from, to be asked for SIGKILL when it dies (step 2), or 0 for
// a child that may outlive its parent.
[[noreturn]] void RunChild(const ChildPlan& plan, pid_t parent);

// For a forked child that does not exec (the local spawner's guardian): closes every
// descriptor. Async-signal-safe.
void CloseAllDescriptors();

// True when a process `pid` exists (also one this process may not signal). For a child already
// reaped: its pid was taken by another process, so no process group of that id is left (Linux
// does not reuse a pid that still names a group), and kill(-pid) would hit the new owner's.
bool PidInUse(pid_t pid);

// In the parent, once its copy of error_fd is closed: waits for the child's exec outcome on
// the pipe's read end. EOF (nullopt) means the exec succeeded; otherwise the child's errno.
std::optional<int> ReadExecError(int read_fd);

// How an exec failure is told: "cannot execute 'trian.py': No such file or directory", and
// "cannot execute 'trian': command not found in PATH" for a bare name no PATH entry holds.
// The common mistakes get the way out in parentheses, judged by the file `program` names in
// `dir` (the rank's working directory; the caller's when empty): a script given by its bare
// name in that directory (`hvdrun -np 2 train.py`: "run it as /usr/bin/python3 train.py"), `python`
// where Debian has only python3, a Python script without execute permission or without a #!
// line.
std::string ExecErrorMessage(const std::string& program, int error, const std::string& dir = "");

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_CHILD_PROCESS_H_
