#include "launcher/output/output_forwarder.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test/fakes/mem_file.h"

namespace hvd::launcher {
namespace {

struct Fixture {
  explicit Fixture(int size = 2, std::string dir = "", std::vector<int> console_ranks = {}) {
    OutputForwarder::Options options;
    options.size = size;
    options.output_dir = std::move(dir);
    options.console_ranks = std::move(console_ranks);
    options.stdout_fd = out.fd();
    options.stderr_fd = err.fd();
    forwarder = std::make_unique<OutputForwarder>(options);
  }
  MemFile out;
  MemFile err;
  std::unique_ptr<OutputForwarder> forwarder;
};

TEST(OutputForwarderTest, PrefixesEveryLineWithRankAndStream) {
  Fixture f;
  f.forwarder->Write(0, Stream::kStdout, "hello\nworld\n");
  f.forwarder->Write(1, Stream::kStderr, "oops\n");
  EXPECT_EQ(f.out.Contents(), "[0]<stdout>:hello\n[0]<stdout>:world\n");
  EXPECT_EQ(f.err.Contents(), "[1]<stderr>:oops\n");
}

TEST(OutputForwarderTest, JoinsLinesSplitAcrossReadsAndKeepsRanksApart) {
  Fixture f;
  f.forwarder->Write(0, Stream::kStdout, "par");
  f.forwarder->Write(1, Stream::kStdout, "other\n");
  f.forwarder->Write(0, Stream::kStdout, "tial\n");
  EXPECT_EQ(f.out.Contents(), "[1]<stdout>:other\n[0]<stdout>:partial\n");
}

TEST(OutputForwarderTest, FinishFlushesPartialLastLineWithNewline) {
  Fixture f;
  f.forwarder->Write(0, Stream::kStdout, "no newline");
  EXPECT_EQ(f.out.Contents(), "");
  f.forwarder->Finish(0, Stream::kStdout);
  EXPECT_EQ(f.out.Contents(), "[0]<stdout>:no newline\n");
  f.forwarder->Finish(0, Stream::kStdout);  // nothing pending: no empty line
  EXPECT_EQ(f.out.Contents(), "[0]<stdout>:no newline\n");
}

TEST(OutputForwarderTest, CarriageReturnEndsALineAndCrLfStaysOneLine) {
  Fixture f;
  f.forwarder->Write(0, Stream::kStdout, "10%\r20%\r");
  f.forwarder->Write(0, Stream::kStdout, "\ndone\r\n");
  f.forwarder->Write(0, Stream::kStdout, "last\r");
  f.forwarder->Write(0, Stream::kStdout, "x");
  f.forwarder->Finish(0, Stream::kStdout);
  EXPECT_EQ(f.out.Contents(),
            "[0]<stdout>:10%\r[0]<stdout>:20%\r\n[0]<stdout>:done\r\n[0]<stdout>:last\r"
            "[0]<stdout>:x\n");
}

TEST(OutputForwarderTest, Utf8SplitAcrossReadsPassesThroughByteExact) {
  Fixture f;
  std::string text = "h\xC3\xA9llo \xE2\x82\xAC \xF0\x9F\x98\x80\n";  // é, €, emoji
  for (char c : text) f.forwarder->Write(0, Stream::kStdout, std::string(1, c));
  EXPECT_EQ(f.out.Contents(), "[0]<stdout>:" + text);
}

TEST(OutputForwarderTest, VeryLongLineIsWrittenWhole) {
  Fixture f;
  std::string line(3 * 1024 * 1024, 'x');
  f.forwarder->Write(1, Stream::kStdout, line.substr(0, 100000));
  f.forwarder->Write(0, Stream::kStdout, "short\n");
  f.forwarder->Write(1, Stream::kStdout, line.substr(100000) + "\n");
  EXPECT_EQ(f.out.Contents(), "[0]<stdout>:short\n[1]<stdout>:" + line + "\n");
}

TEST(OutputForwarderTest, KeepsTheLastStderrLines) {
  Fixture f;
  for (int i = 0; i < 23; ++i)
    f.forwarder->Write(0, Stream::kStderr, "e" + std::to_string(i) + "\n");
  f.forwarder->Write(0, Stream::kStdout, "not stderr\n");
  std::vector<std::string> last20;
  for (int i = 3; i < 23; ++i) last20.push_back("e" + std::to_string(i));
  EXPECT_EQ(f.forwarder->StderrTail(0), last20);
  EXPECT_TRUE(f.forwarder->StderrTail(1).empty());
}

TEST(OutputForwarderTest, RankDirNamesArePaddedToTheWidthOfSizeMinusOne) {
  EXPECT_EQ(OutputForwarder::RankDirName(0, 1), "rank.0");
  EXPECT_EQ(OutputForwarder::RankDirName(3, 10), "rank.3");
  EXPECT_EQ(OutputForwarder::RankDirName(3, 11), "rank.03");
  EXPECT_EQ(OutputForwarder::RankDirName(42, 101), "rank.042");
}

std::string ReadFile(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

TEST(OutputForwarderTest, WritesRawBytesToPerRankFiles) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hvd_forwarder_test_" + std::to_string(getpid()));
  {
    Fixture f(11, dir.string());
    ASSERT_TRUE(f.forwarder->OpenFiles().ok());
    f.forwarder->Write(10, Stream::kStdout, "raw\rbytes");
    f.forwarder->Write(10, Stream::kStderr, "err\n");
    f.forwarder->Finish(10, Stream::kStdout);
  }
  EXPECT_EQ(ReadFile(dir / "rank.10" / "stdout"), "raw\rbytes");
  EXPECT_EQ(ReadFile(dir / "rank.10" / "stderr"), "err\n");
  EXPECT_TRUE(std::filesystem::exists(dir / "rank.00" / "stdout"));
  std::filesystem::remove_all(dir);
}

// --console-ranks: the others' lines stay off the console but reach their files and the stderr
// tail; a rank asked for its stacks has its stderr shown for a while.
TEST(OutputForwarderTest, OnlyTheConsoleRanksReachTheConsoleAndTheFilesGetEveryRank) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() /
                              ("hvd_forwarder_console_" + std::to_string(getpid()));
  {
    Fixture f(3, dir.string(), {0, 2});
    ASSERT_TRUE(f.forwarder->OpenFiles().ok());
    for (int rank = 0; rank < 3; ++rank) {
      f.forwarder->Write(rank, Stream::kStdout, "out " + std::to_string(rank) + "\n");
      f.forwarder->Write(rank, Stream::kStderr, "err " + std::to_string(rank) + "\n");
    }
    EXPECT_EQ(f.out.Contents(), "[0]<stdout>:out 0\n[2]<stdout>:out 2\n");
    EXPECT_EQ(f.err.Contents(), "[0]<stderr>:err 0\n[2]<stderr>:err 2\n");
    EXPECT_EQ(f.forwarder->StderrTail(1), std::vector<std::string>{"err 1"});
    // Asked for its stacks: rank 1's stderr shows, its stdout does not; later it is hidden again.
    f.forwarder->ShowStderrFor(1, std::chrono::hours(1));
    f.forwarder->Write(1, Stream::kStderr, "stack 1\n");
    f.forwarder->Write(1, Stream::kStdout, "still hidden\n");
    f.forwarder->ShowStderrFor(1, std::chrono::seconds(0));
    f.forwarder->Write(1, Stream::kStderr, "hidden again\n");
    EXPECT_EQ(f.err.Contents(), "[0]<stderr>:err 0\n[2]<stderr>:err 2\n[1]<stderr>:stack 1\n");
    EXPECT_EQ(f.out.Contents(), "[0]<stdout>:out 0\n[2]<stdout>:out 2\n");
  }
  EXPECT_EQ(ReadFile(dir / "rank.1" / "stdout"), "out 1\nstill hidden\n");
  EXPECT_EQ(ReadFile(dir / "rank.1" / "stderr"), "err 1\nstack 1\nhidden again\n");
  std::filesystem::remove_all(dir);
}

// A rank's file on a full disk (here /dev/full, whose every write fails with ENOSPC): hvdrun
// says once which file ends early and why, writes nothing more to it, and the console still
// gets every line.
TEST(OutputForwarderTest, AFileThatCannotBeWrittenEndsThereAndSaysSoOnce) {
  std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("hvd_forwarder_full_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir / "rank.1");
  std::filesystem::create_symlink("/dev/full", dir / "rank.1" / "stdout");
  {
    Fixture f(2, dir.string());
    ASSERT_TRUE(f.forwarder->OpenFiles().ok());
    f.forwarder->Write(1, Stream::kStdout, "one\n");
    f.forwarder->Write(1, Stream::kStdout, "two\n");
    f.forwarder->Write(1, Stream::kStderr, "err\n");
    EXPECT_EQ(f.out.Contents(), "[1]<stdout>:one\n[1]<stdout>:two\n");
    const std::string err = f.err.Contents();
    const std::string said = "hvdrun: cannot write rank 1's stdout to '" +
                             (dir / "rank.1" / "stdout").string() +
                             "': No space left on device; the file ends there, and the rest of "
                             "that output goes to this console only\n";
    EXPECT_EQ(err, said + "[1]<stderr>:err\n");
  }
  EXPECT_EQ(ReadFile(dir / "rank.1" / "stderr"), "err\n");
  std::filesystem::remove_all(dir);
}

TEST(OutputForwarderTest, UncreatableOutputDirectoryIsAnErrorNamingThePath) {
  Fixture f(1, "/proc/hvd_no_such_dir");
  Status status = f.forwarder->OpenFiles();
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.message().find("/proc/hvd_no_such_dir"), std::string::npos) << status.message();
}

}  // namespace
}  // namespace hvd::launcher
