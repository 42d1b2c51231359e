#include "launcher/output/console_sink.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

#include "launcher/output/output_forwarder.h"

namespace hvd::launcher {
namespace {

// A console whose reader has stopped reading (a pipe nobody reads, as `| less` left at a
// page): writes return at once however much waits, the backlog is reported past its limit,
// and once the reader reads again every byte arrives, in order. Until 2026-12-02 the first
// write past the pipe's 64 KiB blocked hvdrun's event loop until the reader came back.
TEST(ConsoleSinkTest, AStalledReaderNeverBlocksAWriteAndGetsEverythingInOrderLater) {
  int fds[2];
  ASSERT_EQ(::pipe2(fds, O_CLOEXEC), 0);
  std::string sent;
  for (int i = 0; sent.size() <= 2 * kConsoleBacklogBytes; ++i) {
    std::string line = std::to_string(i) + ":" + std::string(4000, 'a' + i % 26) + "\n";
    sent += line;
    ConsoleWrite(fds[1], std::move(line));  // a blocking write would stop the test here
  }
  EXPECT_TRUE(ConsoleBacklogged());
  std::string got;
  char buf[1 << 16];
  while (got.size() < sent.size()) {
    ssize_t n = ::read(fds[0], buf, sizeof(buf));
    ASSERT_GT(n, 0);
    got.append(buf, static_cast<size_t>(n));
  }
  ConsoleFlush(std::chrono::seconds(30));
  EXPECT_FALSE(ConsoleBacklogged());
  EXPECT_TRUE(got == sent) << got.size() << " bytes of " << sent.size();
  EXPECT_FALSE(Console(fds[1]).closed());
  ::close(fds[0]);
  ConsoleWrite(fds[1], "after the reader left\n");
  ConsoleFlush(std::chrono::seconds(30));
  EXPECT_TRUE(Console(fds[1]).closed());
  ::close(fds[1]);
}

// A regular file is written at once (its contents are there when the call returns).
TEST(ConsoleSinkTest, ARegularFileIsWrittenAtOnce) {
  char path[] = "/tmp/hvd-console-sink-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  ConsoleWrite(fd, "one\n");
  ConsoleWrite(fd, "two\n");
  char buf[16] = {};
  EXPECT_EQ(::pread(fd, buf, sizeof(buf), 0), 8);
  EXPECT_EQ(std::string(buf), "one\ntwo\n");
  EXPECT_FALSE(Console(fd).closed());
  ::close(fd);
}

// Output without line ends is not held without limit: past 1 MiB it goes out as a line.
TEST(ConsoleSinkTest, OutputWithoutLineEndsIsCutAtOneMebibyte) {
  char path[] = "/tmp/hvd-console-sink-XXXXXX";
  const int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::unlink(path);
  OutputForwarder::Options options;
  options.stdout_fd = fd;
  OutputForwarder forwarder(options);
  const std::string chunk(64 << 10, 'x');
  for (int i = 0; i < 24; ++i) forwarder.Write(0, Stream::kStdout, chunk);  // 1.5 MiB
  const off_t size = ::lseek(fd, 0, SEEK_END);
  EXPECT_EQ(size, static_cast<off_t>(std::string("[0]<stdout>:").size() + (1 << 20) + 1));
  forwarder.Finish(0, Stream::kStdout);
  EXPECT_EQ(::lseek(fd, 0, SEEK_END),
            static_cast<off_t>(2 * std::string("[0]<stdout>:").size() + 24 * chunk.size() + 2));
  ::close(fd);
}

}  // namespace
}  // namespace hvd::launcher
