#include "launcher/local/oom_kills.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>
#include <string>
#include <vector>

namespace hvd::launcher {
namespace {

const int kSigkill = W_EXITCODE(0, SIGKILL);  // waitpid's status of a process killed by SIGKILL

// The kernel's own lines (Linux 6.1, mm/oom_kill.c), as /dev/kmsg gives their text.
const std::string kMemcg =
    "Memory cgroup out of memory: Killed process 18362 (python3) total-vm:278712kB, "
    "anon-rss:65152kB, file-rss:6656kB, shmem-rss:0kB, UID:0 pgtables:184kB oom_score_adj:0";
const std::string kGlobal =
    "Out of memory: Killed process 4242 (train.py) total-vm:9000000kB, anon-rss:7340032kB, "
    "file-rss:0kB, shmem-rss:0kB, UID:1000 pgtables:20000kB oom_score_adj:0";

TEST(OomKillsTest, ReadsTheVictimOfTheKernelsLines) {
  std::optional<OomKillRecord> memcg = ParseOomKillMessage(kMemcg);
  ASSERT_TRUE(memcg);
  EXPECT_EQ(memcg->pid, 18362);
  EXPECT_EQ(memcg->name, "python3");
  EXPECT_EQ(memcg->constraint, "Memory cgroup out of memory");
  EXPECT_EQ(memcg->anon_rss_kb, 65152u);
  std::optional<OomKillRecord> global = ParseOomKillMessage(kGlobal);
  ASSERT_TRUE(global);
  EXPECT_EQ(global->pid, 4242);
  EXPECT_EQ(global->name, "train.py");
  EXPECT_EQ(global->constraint, "Out of memory");
  // Kernels before 4.19 said "Kill process ... or sacrifice child", then "Killed process" alone.
  EXPECT_FALSE(
      ParseOomKillMessage("Out of memory: Kill process 77 (python3) score 912 or sacrifice child"));
  std::optional<OomKillRecord> old = ParseOomKillMessage(
      "Killed process 77 (python3) total-vm:100kB, anon-rss:64kB, file-rss:0kB");
  ASSERT_TRUE(old);
  EXPECT_EQ(old->pid, 77);
  EXPECT_EQ(old->constraint, "");
  // A name with a space and a parenthesis in it
  std::optional<OomKillRecord> odd =
      ParseOomKillMessage("Out of memory: Killed process 9 (a (b) c) total-vm:1kB, anon-rss:2kB");
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->name, "a (b) c");
  EXPECT_EQ(odd->anon_rss_kb, 2u);
}

TEST(OomKillsTest, OtherLinesAreNotKills) {
  for (const char* line :
       {"oom_reaper: reaped process 18362 (python3), now anon-rss:0kB, file-rss:0kB",
        "python3 invoked oom-killer: gfp_mask=0xcc0(GFP_KERNEL), order=0, oom_score_adj=0",
        "Killed process", "Killed process x (y)", "Killed process 0 (swapper)", "Killed process 12",
        "Killed process 12 python3", "Killed process 99999999999 (a)", ""}) {
    EXPECT_FALSE(ParseOomKillMessage(line)) << line;
  }
}

TEST(OomKillsTest, TheKillOfThisPidSinceTheStartIsNamed) {
  const std::vector<std::string> log = {"eth0: link up", kMemcg, "something else"};
  EXPECT_EQ(ExplainKillFrom(18362, kSigkill, 1, log),
            "killed by the kernel's OOM killer (Memory cgroup out of memory; python3, anon-rss "
            "65152 kB)");
  // Pid 1836 is not pid 18362: the OOM killer killed another process, not this rank
  EXPECT_EQ(ExplainKillFrom(1836, kSigkill, 1, log), std::nullopt);
  // An unknown pid: only the count is said
  EXPECT_EQ(ExplainKillFrom(-1, kSigkill, 1, log),
            "the kernel's OOM killer killed 1 process on this host during the job (dmesg names "
            "it)");
}

TEST(OomKillsTest, AnOlderKillOfTheSamePidIsNotTaken) {
  // The log holds a kill of pid 4242 from before the job (a pid used again since); one kill
  // happened during the job, of another process.
  const std::vector<std::string> log = {kGlobal, kMemcg};
  EXPECT_EQ(ExplainKillFrom(4242, kSigkill, 1, log), std::nullopt);
  // With two kills during the job, both are its own
  EXPECT_EQ(ExplainKillFrom(4242, kSigkill, 2, log),
            "killed by the kernel's OOM killer (Out of memory; train.py, anon-rss 7340032 kB)");
}

TEST(OomKillsTest, WithoutTheLogOrBehindAShellOnlyTheCountIsSaid) {
  EXPECT_EQ(ExplainKillFrom(18362, kSigkill, 2, std::nullopt),
            "the kernel's OOM killer killed 2 processes on this host during the job (dmesg names "
            "them)");
  // A shell reports its child killed by SIGKILL as exit code 137; the child's pid is unknown.
  EXPECT_EQ(ExplainKillFrom(18362, W_EXITCODE(137, 0), 1, std::vector<std::string>{kMemcg}),
            "the kernel's OOM killer killed 1 process on this host during the job (dmesg names "
            "it)");
}

TEST(OomKillsTest, NothingIsSaidWithoutAKillOrForOtherEnds) {
  EXPECT_EQ(ExplainKillFrom(18362, kSigkill, 0, std::vector<std::string>{kMemcg}), std::nullopt);
  EXPECT_EQ(ExplainKillFrom(18362, W_EXITCODE(0, SIGTERM), 1, std::vector<std::string>{kMemcg}),
            std::nullopt);
  EXPECT_EQ(ExplainKillFrom(18362, W_EXITCODE(1, 0), 1, std::vector<std::string>{kMemcg}),
            std::nullopt);
  EXPECT_EQ(ExplainKill(18362, kSigkill, std::nullopt), std::nullopt);
}

TEST(OomKillsTest, TheHostsCountIsReadWhereTheKernelKeepsIt) {
  // Every Linux since 4.13 has it in /proc/vmstat (this one included).
  std::optional<uint64_t> count = OomKillCount();
  ASSERT_TRUE(count.has_value());
  // No kill since the start: nothing to say about a rank killed by SIGKILL (a start counted
  // ahead of now, so that another test's OOM kill meanwhile cannot count).
  EXPECT_EQ(ExplainKill(::getpid(), kSigkill, *count + 1000), std::nullopt);
}

}  // namespace
}  // namespace hvd::launcher
