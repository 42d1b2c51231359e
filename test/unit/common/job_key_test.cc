#include "common/job_key.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>

namespace hvd::control {
namespace {

TEST(JobKey, GeneratedKeysAreRandomAndNonZero) {
  auto a = GenerateJobKey();
  auto b = GenerateJobKey();
  ASSERT_TRUE(a.ok());
  ASSERT_TRUE(b.ok());
  EXPECT_NE(*a, *b);
  EXPECT_FALSE(std::all_of(a->begin(), a->end(), [](uint8_t v) { return v == 0; }));
}

TEST(JobKey, MemfdRoundTripReadsTwice) {
  JobKey key = *GenerateJobKey();
  auto fd = WriteKeyToMemfd(key);
  ASSERT_TRUE(fd.ok()) << fd.status().ToString();
  // Inheritable by children: not close-on-exec.
  EXPECT_EQ(fcntl(*fd, F_GETFD) & FD_CLOEXEC, 0);
  auto first = ReadKeyFromFd(*fd);
  auto second = ReadKeyFromFd(*fd);  // pread at offset 0: re-init reads it again
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(*first, key);
  EXPECT_EQ(*second, key);
  close(*fd);
}

TEST(JobKey, MemfdIsSealedAgainstChanges) {
  JobKey key = *GenerateJobKey();
  int fd = *WriteKeyToMemfd(key);
  EXPECT_LT(pwrite(fd, "x", 1, 0), 0);
  EXPECT_NE(ftruncate(fd, 0), 0);
  EXPECT_EQ(*ReadKeyFromFd(fd), key);
  close(fd);
}

TEST(JobKey, WrongSizedFileIsInvalidArgumentNamingTheFd) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  ASSERT_EQ(write(fds[1], "short", 5), 5);
  auto key = ReadKeyFromFd(fds[0]);
  ASSERT_FALSE(key.ok());
  EXPECT_NE(key.status().message().find(std::to_string(fds[0])), std::string::npos);
  close(fds[0]);
  close(fds[1]);
}

TEST(JobKey, ClosedFdIsIoError) {
  auto key = ReadKeyFromFd(987654);
  ASSERT_FALSE(key.ok());
  EXPECT_EQ(key.status().code(), StatusCode::kIoError);
  EXPECT_NE(key.status().message().find("HVD_SECRET_FD"), std::string::npos);
}

}  // namespace
}  // namespace hvd::control
