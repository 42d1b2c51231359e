#include "launcher/local/stack_dump.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace hvd::launcher {
namespace {

TEST(StackDumpTest, ReadsPidParentAndGroupWhateverTheProgramIsCalled) {
  std::optional<ProcessEntry> plain = ParseProcStat("4242 (python3) S 4000 4100 4100 0 -1 ...");
  ASSERT_TRUE(plain);
  EXPECT_EQ(plain->pid, 4242);
  EXPECT_EQ(plain->ppid, 4000);
  EXPECT_EQ(plain->pgrp, 4100);
  // A program may call itself anything, parentheses and spaces included.
  std::optional<ProcessEntry> odd = ParseProcStat("7 (a) S 1 1 (b) R 99 98 97 0) S 5 6 ...");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->ppid, 5);
  EXPECT_EQ(odd->pgrp, 6);
  for (const char* bad :
       {"", "4242", "4242 (python3", "x (p) S 1 2", "4242 (p) S 1", "4242 (p) S one 2",
        "4242 (p) S 1 2x", "040 (p) S 1 2", "+40 (p) S 1 2", "40 (p) S -1 2"}) {
    EXPECT_FALSE(ParseProcStat(bad)) << bad;
  }
}

TEST(StackDumpTest, ReadsTheCaughtSignalsMask) {
  // Signal n is bit n-1: 0x...0800 0000 0000 is bit 43, signal 44.
  const std::string status =
      "Name:\tpython3\nSigIgn:\t0000000001001000\n"
      "SigCgt:\t0000080000004002\nCapInh:\t0\n";
  EXPECT_TRUE(StatusCatches(status, 44));
  EXPECT_TRUE(StatusCatches(status, 2));   // SIGINT, as Python catches it
  EXPECT_TRUE(StatusCatches(status, 15));  // 0x4000 is bit 14
  EXPECT_FALSE(StatusCatches(status, 13));
  EXPECT_FALSE(StatusCatches(status, 0));
  EXPECT_FALSE(StatusCatches(status, 65));
  EXPECT_FALSE(StatusCatches("Name:\tsh\n", 44));
  EXPECT_FALSE(StatusCatches("Name:\tsh\nSigCgt:\tzz\n", 44));
  EXPECT_FALSE(StatusCatches("Name:\tsh\nSigCgt:\t\n", 44));
}

TEST(StackDumpTest, OnlyTheOutermostCatchersOfTheGroupAreChosen) {
  // 100 leads the group (the guardian: catches nothing), 101 a shell without exec, 102 the
  // Python under it, 103 and 104 its forked workers (they inherit the handler), 105 a Python of
  // another group, 106 a second Python the shell started.
  std::vector<ProcessEntry> table = {
      {100, 1, 100, false},  {101, 100, 100, false}, {102, 101, 100, true}, {103, 102, 100, true},
      {104, 102, 100, true}, {105, 1, 105, true},    {106, 101, 100, true},
  };
  EXPECT_EQ(OutermostCatchers(table, 100), (std::vector<pid_t>{102, 106}));
  EXPECT_EQ(OutermostCatchers(table, 105), (std::vector<pid_t>{105}));
  EXPECT_TRUE(OutermostCatchers(table, 7).empty());
}

TEST(StackDumpTest, RankListsAreDecimalsSeparatedByCommas) {
  EXPECT_EQ(ParseRankList("1,3"), (std::vector<int>{1, 3}));
  EXPECT_EQ(ParseRankList("0"), (std::vector<int>{0}));
  for (const char* bad :
       {"", ",", "1,", ",1", "1,,2", "-1", "+1", "01", "a", "1 ,2", "99999999999"}) {
    EXPECT_FALSE(ParseRankList(bad)) << bad;
  }
}

TEST(StackDumpTest, RequestsReachTheEventLoopOnceEach) {
  StackRequests requests;
  pollfd p{requests.event_fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  requests.Push("3,1");
  requests.Push("garbage");
  std::thread other([&] { requests.Push("1,2"); });
  other.join();
  EXPECT_EQ(::poll(&p, 1, 0), 1);
  EXPECT_EQ(requests.TakeAll(), (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(::poll(&p, 1, 0), 0);
  EXPECT_TRUE(requests.TakeAll().empty());
}

// A real process group: the signal goes to the process that catches it, not to its parent
// shell, whose default action for it would end it.
TEST(StackDumpTest, SignalsTheCatcherOfARealGroupAndSparesTheRest) {
  const std::string ready = ::testing::TempDir() + "hvd-stack-ready-" + std::to_string(::getpid());
  const std::string caught = ready + ".caught";
  pid_t leader = ::fork();
  if (leader == 0) {
    ::setpgid(0, 0);
    const std::string script = "trap 'echo caught > " + caught + "' " +
                               std::to_string(kStackSignal) + "; touch " + ready +
                               "; while [ ! -e " + caught + " ]; do sleep 0.02; done";
    // The outer shell does not exec the inner one, which catches the signal.
    const std::string outer = "sh -c \"" + script + "\"; exit $?";
    ::execl("/bin/sh", "sh", "-c", outer.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ASSERT_GT(leader, 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline && !std::ifstream(ready)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  // The trap is installed before the touch, so the inner shell catches it by now.
  EXPECT_EQ(SignalStackDumpers(leader), 1);
  int status = 0;
  ASSERT_EQ(::waitpid(leader, &status, 0), leader);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_TRUE(std::ifstream(caught)) << "the catcher did not get the signal";
  ::unlink(ready.c_str());
  ::unlink(caught.c_str());
  EXPECT_EQ(SignalStackDumpers(leader), 0);  // the group is gone
}

}  // namespace
}  // namespace hvd::launcher
