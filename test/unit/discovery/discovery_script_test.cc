#include "discovery/discovery_script.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <chrono>
#include <fstream>

#include "test/support/temp_file.h"

namespace hvd::discovery {
namespace {

using std::chrono::milliseconds;
using ::testing::HasSubstr;

Result<std::vector<HostSlots>> RunScript(const std::string& command, std::optional<int> slots = {},
                                         milliseconds timeout = milliseconds(5000)) {
  DiscoveryScriptOptions options;
  options.command = command;
  options.default_slots = slots;
  options.timeout = timeout;
  return RunDiscoveryScript(options);
}

std::string Error(const Result<std::vector<HostSlots>>& r) {
  EXPECT_FALSE(r.ok());
  return r.ok() ? "" : r.status().message();
}

TEST(DiscoveryScriptTest, ParsesWhatTheScriptPrints) {
  Result<std::vector<HostSlots>> hosts =
      RunScript("printf '\\nlocalhost:2\\n\\n[::1]:1\\n127.0.0.1\\n'; echo noise >&2", 3);
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(*hosts,
            (std::vector<HostSlots>{{"localhost", 2, {}}, {"::1", 1, {}}, {"127.0.0.1", 3, {}}}));
  Result<std::vector<HostSlots>> empty = RunScript("true");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(DiscoveryScriptTest, ArgumentsGoThroughTheShell) {
  hvd::testing::TempFile script("hosts.sh", "echo \"$1:$2\"\n");
  Result<std::vector<HostSlots>> hosts = RunScript("sh " + script.path() + " h1 4");
  ASSERT_TRUE(hosts.ok()) << hosts.status().ToString();
  EXPECT_EQ(*hosts, (std::vector<HostSlots>{{"h1", 4, {}}}));
}

TEST(DiscoveryScriptTest, BadOutputNamesTheScriptAndTheLine) {
  EXPECT_EQ(Error(RunScript("printf 'a:1\\nh:x\\n'")),
            "discovery script 'printf 'a:1\\nh:x\\n'' output line 2: slot count 'x' is not a "
            "positive integer; line: 'h:x'");
  EXPECT_THAT(Error(RunScript("echo a:b:c")), HasSubstr("output line 1"));
  EXPECT_THAT(Error(RunScript("echo a:b:c")), HasSubstr("line: 'a:b:c'"));
  EXPECT_THAT(Error(RunScript("echo h:-1")), HasSubstr("line: 'h:-1'"));
  EXPECT_THAT(Error(RunScript("printf 'a:1\\na:2\\n'")),
              HasSubstr("host 'a' has 2 slots but line 1 gave it 1"));
  EXPECT_THAT(Error(RunScript("echo h")),
              HasSubstr("has no ':slots' and --slots-per-host is not set"));
}

TEST(DiscoveryScriptTest, NonZeroExitCarriesItsStderr) {
  EXPECT_EQ(Error(RunScript("echo h:1; echo 'cannot reach the scheduler' >&2; exit 3")),
            "discovery script 'echo h:1; echo 'cannot reach the scheduler' >&2; exit 3' exited "
            "with code 3; its stderr: cannot reach the scheduler");
  EXPECT_THAT(Error(RunScript("kill -SEGV $$")), HasSubstr("was killed by SIGSEGV (signal 11)"));
}

TEST(DiscoveryScriptTest, MissingOrNotExecutableScript) {
  EXPECT_THAT(Error(RunScript(hvd::testing::MissingPath())), HasSubstr("exited with code 127"));
  hvd::testing::TempFile script("not_executable.sh", "echo h:1\n");
  ::chmod(script.path().c_str(), 0644);
  std::string error = Error(RunScript(script.path()));
  EXPECT_THAT(error, HasSubstr("exited with code 126"));
  EXPECT_THAT(error, HasSubstr("Permission denied"));
}

TEST(DiscoveryScriptTest, AHangingScriptIsKilledAtTheTimeoutWithWhatItStarted) {
  hvd::testing::TempFile pid_file("grandchild.pid", "");
  auto started = std::chrono::steady_clock::now();
  std::string error =
      Error(RunScript("sleep 30 & echo $! > " + pid_file.path() + "; echo still thinking >&2; wait",
                      {}, milliseconds(300)));
  auto took = std::chrono::steady_clock::now() - started;
  EXPECT_THAT(error, HasSubstr("did not finish within 0.3 s and was killed; its stderr: still "
                               "thinking"));
  EXPECT_LT(took, std::chrono::seconds(5));
  std::ifstream in(pid_file.path());
  int pid = 0;
  in >> pid;
  ASSERT_GT(pid, 0);
  // The grandchild was in the script's process group: killed with it (a zombie at most until
  // init reaps it).
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  bool gone = false;
  while (!gone && std::chrono::steady_clock::now() < deadline) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string all;
    std::getline(stat, all);
    gone = !stat.good() || all.find(") Z") != std::string::npos;
  }
  EXPECT_TRUE(gone) << "pid " << pid;
}

TEST(DiscoveryScriptTest, HugeOutputIsBadOutput) {
  DiscoveryScriptOptions options;
  options.command = "yes localhost:1";
  options.max_output_bytes = 4096;
  std::string error = Error(RunDiscoveryScript(options));
  EXPECT_EQ(error,
            "discovery script 'yes localhost:1' printed more than 4096 bytes and was killed");
}

}  // namespace
}  // namespace hvd::discovery
