#include "launcher/local/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/check.h"
#include "launcher/local/exec_search.h"

namespace hvd::launcher {
namespace {

// Fallback bound for closing descriptors where close_range(2) is missing.
constexpr int kMaxFdToClose = 65536;

// Marks [first, last] close-on-exec.
void MarkCloseOnExec(unsigned first, unsigned last) {
  if (first > last) return;
  if (::syscall(SYS_close_range, first, last, CLOSE_RANGE_CLOEXEC) == 0) return;
  for (unsigned fd = first; fd <= last && fd < static_cast<unsigned>(kMaxFdToClose); ++fd) {
    int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
    if (flags >= 0) ::fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC);
  }
}

// Step 7: every descriptor above 2 but `kept` close-on-exec.
void CloseOthersOnExec(int kept) {
  if (kept > 2) {
    MarkCloseOnExec(3, static_cast<unsigned>(kept) - 1);
    MarkCloseOnExec(static_cast<unsigned>(kept) + 1, ~0u);
  } else {
    MarkCloseOnExec(3, ~0u);
  }
}

bool EndsWithPy(const std::string& path) {
  return path.size() > 3 && path.compare(path.size() - 3, 3, ".py") == 0;
}

// Step 8 with Search::kCandidates (async-signal-safe, no allocation).
[[noreturn]] void ExecFirstCandidate(const std::vector<std::string>& candidates, char* const argv[],
                                     char** sh_argv, char* const envp[], int error_fd) {
  int error = ENOENT;
  bool saw_eacces = false;
  for (const std::string& candidate : candidates) {
    ::execve(candidate.c_str(), argv, envp);
    error = errno;
    if (error == ENOEXEC && !EndsWithPy(candidate)) {
      sh_argv[1] = const_cast<char*>(candidate.c_str());
      ::execve(sh_argv[0], sh_argv, envp);
      break;  // ENOEXEC stands: /bin/sh itself did not run
    }
    if (error == EACCES) {
      saw_eacces = true;
    } else if (error != ENOENT && error != ENOTDIR) {
      break;
    }
  }
  if (saw_eacces && (error == ENOENT || error == ENOTDIR)) error = EACCES;
  ssize_t ignored = ::write(error_fd, &error, sizeof(error));
  (void)ignored;
  ::_exit(error == ENOENT || error == ENOTDIR ? kExitNotFound : kExitNotExecutable);
}

}  // namespace

ChildPlan::ChildPlan(const std::vector<std::string>& argv,
                     const std::map<std::string, std::string>& env)
    : arg_storage_(argv) {
  HVD_CHECK(!argv.empty()) << "no program to run";
  candidates = ExecCandidates(argv[0], env);
  for (std::string& arg : arg_storage_) argv_.push_back(arg.data());
  argv_.push_back(nullptr);
  sh_argv_ = {sh_.data(), nullptr};
  sh_argv_.insert(sh_argv_.end(), argv_.begin() + 1, argv_.end());
  for (const auto& [name, value] : env) env_storage_.push_back(name + "=" + value);
  for (std::string& entry : env_storage_) envp_.push_back(entry.data());
  envp_.push_back(nullptr);
}

[[noreturn]] void RunChild(const ChildPlan& plan, pid_t parent) {
  if (plan.group == ChildPlan::Group::kNewGroup) {
    ::setpgid(0, 0);
  } else if (plan.group == ChildPlan::Group::kNewSession) {
    ::setsid();
  }
  if (parent != 0 && (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent)) {
    ::_exit(kExitParentGone);
  }
  if (plan.default_sigpipe) ::signal(SIGPIPE, SIG_DFL);
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  if (plan.cpus) ::sched_setaffinity(0, sizeof(*plan.cpus), &*plan.cpus);
  if (plan.stdin_fd >= 0) ::dup2(plan.stdin_fd, 0);
  if (plan.stdout_fd >= 0) ::dup2(plan.stdout_fd, 1);
  if (plan.stderr_fd >= 0) ::dup2(plan.stderr_fd, 2);
  if (plan.close_other_fds) CloseOthersOnExec(plan.inherited_fd);
  if (plan.search == ChildPlan::Search::kParentPath) {
    ::execvpe(plan.argv()[0], plan.argv(), plan.envp());
    ::_exit(kExitNotFound);
  }
  ExecFirstCandidate(plan.candidates, plan.argv(), plan.sh_argv(), plan.envp(), plan.error_fd);
}

bool PidInUse(pid_t pid) { return ::kill(pid, 0) == 0 || errno == EPERM; }

void CloseAllDescriptors() {
  if (::syscall(SYS_close_range, 0u, ~0u, 0u) == 0) return;
  for (int fd = 0; fd < kMaxFdToClose; ++fd) ::close(fd);
}

std::optional<int> ReadExecError(int read_fd) {
  int error = 0;
  ssize_t n;
  do {
    n = ::read(read_fd, &error, sizeof(error));
  } while (n < 0 && errno == EINTR);
  if (n == static_cast<ssize_t>(sizeof(error))) return error;
  return std::nullopt;
}

std::string ExecErrorMessage(const std::string& program, int error, const std::string& dir) {
  const bool bare = program.find('/') == std::string::npos;
  const bool python_script =
      program.size() > 3 && program.compare(program.size() - 3, 3, ".py") == 0;
  // The file the program names, relative to `dir` (the rank's working directory) when it is
  // not absolute: a bare name's lookup skips it, which is the point of the first hint.
  const std::string file =
      program.empty() || program[0] == '/' || dir.empty() ? program : dir + "/" + program;
  struct stat st {};
  const bool regular = ::stat(file.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  std::string text = "cannot execute '" + program + "': ";
  if (error == ENOENT && bare) {
    text += "command not found in PATH";
    if (regular) {  // `hvdrun -np 2 train.py` in the script's folder
      text += python_script
                  ? " (" + program + " is in the working directory: run it as /usr/bin/python3 " +
                        program + ")"
                  : " (" + program +
                        " is in the working directory, which PATH lookup skips: give "
                        "it as ./" +
                        program + ")";
    } else if (program == "python") {
      text +=
          " (Debian's interpreter is /usr/bin/python3; python exists only with python-is-python3)";
    }
    return text;
  }
  text += strerror(error);
  if (error == EACCES && regular && (st.st_mode & 0111) == 0) {
    text += python_script
                ? " (a Python script without execute permission: run it as /usr/bin/python3 " +
                      program + ")"
                : " (the file has no execute permission)";
  } else if (error == ENOEXEC && regular) {
    text += python_script
                ? " (a Python script without a #! line: run it as /usr/bin/python3 " + program + ")"
                : " (neither a program nor a script with a #! line, and /bin/sh did not run)";
  }
  return text;
}

}  // namespace hvd::launcher
