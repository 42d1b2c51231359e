#include "timeline/timeline_tool.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <sstream>

#include "test/unit/timeline/hand_trace.h"
#include "test/unit/timeline/test_files.h"

namespace hvd::timeline {
namespace {

class TimelineToolTest : public testing::TempDirTest {};

TEST_F(TimelineToolTest, ExitCodesAndMessages) {
  testing::WriteFile(Path("good.json"), testing::kHandTrace);
  testing::WriteFile(Path("bad.json"), "[{\"ph\" 1");
  testing::WriteFile(Path("empty.json"), "");
  testing::WriteFile(Path("horovod.json"),
                     "[\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":1,\"args\":{\"name\":"
                     "\"grad.a\"}},\n{\"ph\":\"B\",\"name\":\"ALLREDUCE\",\"ts\":0,\"pid\":1},\n"
                     "{\"ph\":\"E\",\"ts\":5,\"pid\":1},\n");
  const std::string hand = testing::kHandTrace;
  testing::WriteFile(Path("cut.json"), hand.substr(0, hand.size() / 2));
  struct Case {
    std::vector<std::string> args;
    int code;
    std::string out;  // substring expected on stdout
    std::string err;  // substring expected on stderr
  };
  const Case cases[] = {
      {{"summary", Path("good.json")}, kToolOk, "grad.a (ALLREDUCE)", ""},
      {{"--help"}, kToolOk, "Usage: hvd-timeline [OPTIONS] SUBCOMMAND", ""},
      {{"help"}, kToolOk, "repair", ""},
      {{}, kToolUsageError, "", "A subcommand is required"},
      {{"sumary", "x"}, kToolUsageError, "", "unknown command 'sumary'"},
      {{"summary"}, kToolUsageError, "", "FILE is required"},
      {{"summary", "a", "b"}, kToolUsageError, "", "not expected: b"},
      // A subcommand's --help is its help (it used to be taken for a FILE: "cannot open")
      {{"summary", "--help"}, kToolOk, "Usage: hvd-timeline summary [OPTIONS] FILE", ""},
      {{"repair", "-h"}, kToolOk, "Usage: hvd-timeline repair [OPTIONS] FILE", ""},
      // A directory is named as one (it used to be "not valid JSON ... end of input")
      {{"summary", dir_.string()}, kToolFileError, "", "is a directory"},
      // A device never ends (/dev/zero was read until the OOM killer)
      {{"summary", "/dev/zero"}, kToolFileError, "", "'/dev/zero' is a device"},
      {{"summary", Path("nope.json")},
       kToolFileError,
       "",
       "cannot open '" + Path("nope.json") + "'"},
      {{"summary", Path("bad.json")},
       kToolFileError,
       "",
       "'" + Path("bad.json") + "' is not a timeline: not JSON"},
      {{"summary", Path("empty.json")}, kToolFileError, "", "is empty (0 bytes)"},
      // Horovod's form (each event followed by ",", the array never closed) is read, as
      // Chrome's trace viewer does (it used to be refused), and the summary says so
      {{"summary", Path("horovod.json")}, kToolOk, "never closed", ""},
      {{"summary", Path("cut.json")}, kToolOk, "cut at byte", ""},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(::testing::PrintToString(c.args));
    // Given arguments, when the tool runs
    std::ostringstream out, err;
    int code = RunTimelineTool(c.args, out, err);
    // Then the exit code and messages are as documented
    EXPECT_EQ(code, c.code);
    EXPECT_NE(out.str().find(c.out), std::string::npos) << out.str();
    EXPECT_NE(err.str().find(c.err), std::string::npos) << err.str();
    if (c.code != kToolOk) {
      EXPECT_EQ(out.str(), "") << "errors go to stderr only";
    }
  }
}

TEST_F(TimelineToolTest, RealBinaryReportsErrorsWithExitCode) {
  struct Case {
    std::string args;
    int code;
    std::string output;
  };
  testing::WriteFile(Path("good.json"), testing::kHandTrace);
  const Case cases[] = {
      {"summary " + Path("good.json"), 0, "BROADCAST"},
      {"summary " + Path("missing.json"), 1, Path("missing.json")},
      {"frobnicate", 2, "unknown command 'frobnicate'"},
      {"summary --help", 0, "Usage: hvd-timeline summary [OPTIONS] FILE"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.args);
    // Given the installed-style binary, when run through the shell
    std::string command = std::string(HVD_TIMELINE_TOOL) + " " + c.args + " 2>&1";
    FILE* pipe = ::popen(command.c_str(), "r");
    ASSERT_NE(pipe, nullptr);
    std::string output;
    char buffer[4096];
    while (size_t n = std::fread(buffer, 1, sizeof buffer, pipe)) output.append(buffer, n);
    int status = ::pclose(pipe);
    // Then it exits with the documented code and says what went wrong
    ASSERT_TRUE(WIFEXITED(status));
    EXPECT_EQ(WEXITSTATUS(status), c.code);
    EXPECT_NE(output.find(c.output), std::string::npos) << output;
  }
}

}  // namespace
}  // namespace hvd::timeline
