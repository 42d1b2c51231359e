#include "launcher/local/child_process.h"

#include <errno.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "launcher/local/exec_search.h"

namespace hvd::launcher {
namespace {

// A close-on-exec pipe whose ends close with it.
struct Pipe {
  int read = -1;
  int write = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    read = fds[0];
    write = fds[1];
  }
  ~Pipe() {
    CloseWrite();
    if (read >= 0) ::close(read);
  }
  void CloseWrite() {
    if (write >= 0) ::close(write);
    write = -1;
  }
};

// Everything `fd` gives until EOF.
std::string ReadAll(int fd) {
  std::string out;
  char buffer[4096];
  ssize_t n;
  while ((n = ::read(fd, buffer, sizeof(buffer))) > 0 || (n < 0 && errno == EINTR)) {
    if (n > 0) out.append(buffer, static_cast<size_t>(n));
  }
  return out;
}

// The child's wait status.
int Reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

// Forks and runs `plan` in the child (no death signal); the parent's copies of the plan's
// descriptors stay open for the caller to close.
pid_t Start(const ChildPlan& plan) {
  pid_t pid = ::fork();
  if (pid == 0) RunChild(plan, 0);
  EXPECT_GT(pid, 0);
  return pid;
}

// The value of a "Name:\tvalue" line of /proc/<pid>/status text.
std::string StatusField(const std::string& text, const std::string& name) {
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(name + ":\t", 0) == 0) return line.substr(name.size() + 2);
  }
  return "";
}

TEST(ChildProcessTest, AMissingProgramIsReportedAndExits127) {
  // Given a bare name on no PATH entry, and a path that does not exist
  for (const std::string program : {"hvd-no-such-program", "/nonexistent/hvd-program"}) {
    ChildPlan plan({program}, {{"PATH", "/nonexistent"}});
    Pipe exec;
    plan.error_fd = exec.write;
    // When it is started
    pid_t pid = Start(plan);
    exec.CloseWrite();
    // Then the parent learns ENOENT, the child exits 127 and the message says which
    std::optional<int> error = ReadExecError(exec.read);
    ASSERT_TRUE(error.has_value()) << program;
    EXPECT_EQ(*error, ENOENT);
    int status = Reap(pid);
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), kExitNotFound);
    EXPECT_EQ(ExecErrorMessage(program, *error),
              program.find('/') == std::string::npos
                  ? "cannot execute '" + program + "': command not found in PATH"
                  : "cannot execute '" + program + "': No such file or directory");
  }
}

TEST(ChildProcessTest, AFileThatIsNotExecutableIsEaccesAndExits126) {
  // Given a PATH whose only match is a file without execute permission
  char dir[] = "/tmp/hvd_child_process_test_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string file = std::string(dir) + "/script";
  std::ofstream(file) << "#!/bin/sh\n";
  ::chmod(file.c_str(), 0644);
  ChildPlan plan({"script"}, {{"PATH", std::string("/nonexistent:") + dir}});
  Pipe exec;
  plan.error_fd = exec.write;
  // When it is started
  pid_t pid = Start(plan);
  exec.CloseWrite();
  // Then EACCES wins over the ENOENT of the first entry, and the child exits 126
  std::optional<int> error = ReadExecError(exec.read);
  int status = Reap(pid);
  ::unlink(file.c_str());
  ::rmdir(dir);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error, EACCES);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kExitNotExecutable);
}

// A script without a #! line runs under /bin/sh with its arguments, as execvp and a shell (and
// horovodrun's shell) run it (until 2026-12-02 it failed with ENOEXEC, exit 126); a *.py one
// is still refused (sh would read Python as shell), with the hint to name the interpreter.
TEST(ChildProcessTest, AScriptWithoutAShebangRunsUnderShButAPythonOneIsRefused) {
  char dir[] = "/tmp/hvd_child_process_test_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string script = std::string(dir) + "/job", python = std::string(dir) + "/job.py";
  std::ofstream(script) << "exit $(($1 + $2))\n";
  std::ofstream(python) << "import sys\n";
  ::chmod(script.c_str(), 0755);
  ::chmod(python.c_str(), 0755);
  ChildPlan plan({script, "3", "4"}, {{"PATH", "/usr/bin:/bin"}});
  Pipe exec;
  plan.error_fd = exec.write;
  pid_t pid = Start(plan);
  exec.CloseWrite();
  EXPECT_FALSE(ReadExecError(exec.read).has_value());
  int status = Reap(pid);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 7);

  ChildPlan py({python}, {{"PATH", "/usr/bin:/bin"}});
  Pipe py_exec;
  py.error_fd = py_exec.write;
  pid = Start(py);
  py_exec.CloseWrite();
  std::optional<int> error = ReadExecError(py_exec.read);
  status = Reap(pid);
  std::filesystem::remove_all(dir);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(*error, ENOEXEC);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kExitNotExecutable);
}

TEST(ChildProcessTest, ExecErrorsOfCommonMistakesSayTheWayOut) {
  // Given a folder with a Python script without execute permission, an executable one without
  // a #! line, and a non-Python file of each kind
  char dir[] = "/tmp/hvd_exec_hint_test_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string folder = dir;
  for (const auto& [name, mode] : std::vector<std::pair<std::string, mode_t>>{
           {"train.py", 0644}, {"run.py", 0755}, {"data", 0644}, {"blob", 0755}}) {
    std::ofstream(folder + "/" + name) << "print(1)\n";
    ::chmod((folder + "/" + name).c_str(), mode);
  }
  // When their exec failures are told, with the folder as the rank's working directory
  auto told = [&](const std::string& program, int error) {
    return ExecErrorMessage(program, error, folder);
  };
  // Then each says what to run instead
  EXPECT_EQ(told("train.py", ENOENT),
            "cannot execute 'train.py': command not found in PATH (train.py is in the working "
            "directory: run it as /usr/bin/python3 train.py)");
  EXPECT_EQ(told("data", ENOENT),
            "cannot execute 'data': command not found in PATH (data is in the working "
            "directory, which PATH lookup skips: give it as ./data)");
  EXPECT_EQ(told("./train.py", EACCES),
            "cannot execute './train.py': Permission denied (a Python script without execute "
            "permission: run it as /usr/bin/python3 ./train.py)");
  EXPECT_EQ(told(folder + "/data", EACCES),
            "cannot execute '" + folder +
                "/data': Permission denied (the file has no execute "
                "permission)");
  EXPECT_EQ(told("./run.py", ENOEXEC),
            "cannot execute './run.py': Exec format error (a Python script without a #! line: "
            "run it as /usr/bin/python3 ./run.py)");
  EXPECT_EQ(told("./blob", ENOEXEC),
            "cannot execute './blob': Exec format error (neither a program nor a script with a "
            "#! line, and /bin/sh did not run)");
  EXPECT_EQ(told("python", ENOENT),
            "cannot execute 'python': command not found in PATH (Debian's interpreter is "
            "/usr/bin/python3; python exists only with python-is-python3)");
  // And a name in no folder, or a failure the file does not explain, gets no advice
  EXPECT_EQ(told("trian.py", ENOENT), "cannot execute 'trian.py': command not found in PATH");
  EXPECT_EQ(told("./run.py", EACCES), "cannot execute './run.py': Permission denied");
  EXPECT_EQ(told("./trian.py", ENOENT), "cannot execute './trian.py': No such file or directory");
  std::filesystem::remove_all(folder);
}

// A temporary file, open without close-on-exec; removed with the object.
struct TempFile {
  std::string path;
  int fd = -1;
  explicit TempFile(const std::string& stem) {
    path = "/tmp/hvd_child_process_test_" + stem + "_XXXXXX";
    fd = ::mkstemp(path.data());
    EXPECT_GT(fd, 2);
  }
  ~TempFile() {
    ::close(fd);
    ::unlink(path.c_str());
  }
};

TEST(ChildProcessTest, TheProgramGetsItsPipesGroupEmptyMaskAndOnlyTheInheritedDescriptor) {
  // Given a parent that blocks SIGUSR1, ignores SIGPIPE and holds two inheritable descriptors
  sigset_t usr1, old_mask;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &usr1, &old_mask), 0);
  struct sigaction ignore = {}, old_pipe = {};
  ignore.sa_handler = SIG_IGN;
  ASSERT_EQ(::sigaction(SIGPIPE, &ignore, &old_pipe), 0);
  TempFile kept("kept"), leaked("leaked");
  // (the shell reads its own status with builtins: while it waits for a command, it has
  // signals blocked)
  const std::string script =
      "echo pid $$ $(cut -d' ' -f5 /proc/$$/stat); "
      "while read -r l; do case $l in Sig*) echo \"$l\";; esac; done < /proc/$$/status; "
      "for f in /proc/$$/fd/*; do echo \"fd ${f##*/} $(readlink $f)\"; done";
  ChildPlan plan({"/bin/sh", "-c", script}, {{"PATH", "/usr/bin:/bin"}});
  Pipe out, exec;
  plan.group = ChildPlan::Group::kNewGroup;
  plan.default_sigpipe = true;
  plan.stdout_fd = out.write;
  plan.close_other_fds = true;
  plan.inherited_fd = kept.fd;
  plan.error_fd = exec.write;
  // When it runs
  pid_t pid = Start(plan);
  out.CloseWrite();
  exec.CloseWrite();
  const std::string text = ReadAll(out.read);
  EXPECT_FALSE(ReadExecError(exec.read).has_value());
  const int status = Reap(pid);
  ::sigprocmask(SIG_SETMASK, &old_mask, nullptr);
  ::sigaction(SIGPIPE, &old_pipe, nullptr);
  // Then it leads its own group, starts unmasked with SIGPIPE at its default, writes to the
  // pipe, and of the parent's descriptors above 2 has only the inherited one, at its number
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << text;
  const std::string pid_text = std::to_string(pid);
  EXPECT_NE(text.find("pid " + pid_text + " " + pid_text + "\n"), std::string::npos) << text;
  EXPECT_EQ(StatusField(text, "SigBlk"), "0000000000000000") << text;
  const unsigned long ignored = std::strtoul(StatusField(text, "SigIgn").c_str(), nullptr, 16);
  EXPECT_EQ(ignored & (1ul << (SIGPIPE - 1)), 0u) << text;
  EXPECT_NE(text.find("fd " + std::to_string(kept.fd) + " " + kept.path + "\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find(leaked.path), std::string::npos) << text;
}

TEST(ChildProcessTest, ParentPathSearchRunsTheProgramInItsOwnGroupWithThePlansEnvironment) {
  // Given hvdrun --mpi's plan: execvpe of a bare name over this process's own PATH (the
  // plan's environment has none)
  ChildPlan plan({"sh", "-c",
                  "[ \"$(cut -d' ' -f5 /proc/$$/stat)\" = $$ ] || exit 3; "
                  "[ \"$HVD_CHILD_TEST\" = env-passed ] || exit 4"},
                 {{"HVD_CHILD_TEST", "env-passed"}});
  plan.search = ChildPlan::Search::kParentPath;
  // When it runs
  const int status = Reap(Start(plan));
  // Then it found sh, leads its own process group and got the plan's environment
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "3: not a group leader, 4: environment not passed";
}

TEST(ChildProcessTest, ParentPathSearchExits127ForAnyFailure) {
  // Given a program the parent's PATH does not hold
  ChildPlan plan({"hvd-no-such-program"}, {});
  plan.search = ChildPlan::Search::kParentPath;
  // When it is started, then the child exits 127 (nothing is reported: there is no pipe)
  const int status = Reap(Start(plan));
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), kExitNotFound);
}

}  // namespace
}  // namespace hvd::launcher
