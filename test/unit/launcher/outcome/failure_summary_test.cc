#include "launcher/outcome/failure_summary.h"

#include <gtest/gtest.h>
#include <signal.h>

#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/wait_status.h"

namespace hvd::launcher {
namespace {

// waitpid() status words, built the way the kernel encodes them.
int Exited(int code) { return (code & 0xff) << 8; }
int Killed(int signo) { return signo; }

RankOutcome Finished(int rank, int status, bool stopped = false) {
  RankOutcome outcome;
  outcome.rank = rank;
  outcome.host = "localhost";
  outcome.started = true;
  outcome.finished = true;
  outcome.wait_status = status;
  outcome.stopped_by_hvdrun = stopped;
  return outcome;
}

TEST(WaitStatusTest, DescribesExitCodesAndSignals) {
  EXPECT_EQ(DescribeWaitStatus(Exited(3)), "exit code 3");
  EXPECT_EQ(DescribeWaitStatus(Killed(SIGKILL)), "SIGKILL (signal 9)");
  EXPECT_EQ(DescribeWaitStatus(Killed(SIGKILL), "killed by the kernel's OOM killer (x)"),
            "SIGKILL (signal 9): killed by the kernel's OOM killer (x)");
  EXPECT_EQ(DescribeWaitStatus(Killed(SIGKILL), ""), "SIGKILL (signal 9)");
  EXPECT_EQ(ExitCodeOfWaitStatus(Exited(3)), 3);
  EXPECT_EQ(ExitCodeOfWaitStatus(Killed(SIGKILL)), 137);
  EXPECT_TRUE(WaitStatusIsSuccess(Exited(0)));
  EXPECT_FALSE(WaitStatusIsSuccess(Killed(SIGTERM)));
  EXPECT_EQ(SignalName(SIGSEGV), "SIGSEGV");
}

TEST(JobOutcomeTest, ExitCodePrecedence) {
  JobOutcome outcome;
  outcome.ranks = {Finished(0, Exited(0)), Finished(1, Exited(3))};
  EXPECT_EQ(ExitCodeOf(outcome), kExitOk);
  outcome.first_failed_rank = 1;
  EXPECT_EQ(ExitCodeOf(outcome), 3);
  outcome.launch_error = "fork failed";
  EXPECT_EQ(ExitCodeOf(outcome), kExitLaunchFailed);
  outcome.start_timed_out = true;
  EXPECT_EQ(ExitCodeOf(outcome), kExitTimeout);
  outcome.launcher_signal = SIGINT;
  EXPECT_EQ(ExitCodeOf(outcome), 130);
}

TEST(JobOutcomeTest, AJobStoppedForItsTimeoutExits124AndSaysSo) {
  // Past --timeout a rank may still fail before the stop: the timeout came first.
  JobOutcome outcome;
  outcome.ranks = {Finished(0, Killed(SIGTERM), true), Finished(1, Exited(1))};
  outcome.first_failed_rank = 1;
  outcome.job_timed_out_s = 2.5;
  EXPECT_EQ(ExitCodeOf(outcome), kExitTimeout);
  const std::string summary =
      FormatFailureSummary(outcome, [](int) { return std::vector<std::string>(); });
  EXPECT_NE(summary.find("job stopped: it ran past --timeout (2.5 s); hvdrun exits 124"),
            std::string::npos)
      << summary;
}

TEST(FailureSummaryTest, ARankThatReportedItsOwnFailureIsNamedBeforeAPeerThatExitedFirst) {
  // Rank 1 raised and reported it; its exit shut the runtime down, rank 2 failed at once and
  // exited first, and hvdrun stopped the rest.
  JobOutcome outcome;
  outcome.ranks = {Finished(0, Killed(SIGTERM), true), Finished(1, Killed(SIGTERM), true),
                   Finished(2, Exited(1))};
  outcome.ranks[1].reported_failure = "RuntimeError: boom";
  outcome.first_failed_rank = 2;
  auto tail = [](int rank) { return std::vector<std::string>{"line of " + std::to_string(rank)}; };
  std::string text = FormatFailureSummary(outcome, tail);
  EXPECT_NE(text.find("rank 1 on localhost failed first: RuntimeError: boom (reported before its "
                      "exit; rank 2 exited first: exit code 1); hvdrun exits 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("SIGTERM (signal 15)  <- first failure, stopped by hvdrun"),
            std::string::npos)
      << text;
  // Rank 1's lines first, then those of rank 2 (failed on its own), not rank 0's.
  size_t one = text.find("last stderr lines of rank 1:\n  line of 1");
  size_t two = text.find("last stderr lines of rank 2:\n  line of 2");
  ASSERT_NE(one, std::string::npos) << text;
  ASSERT_NE(two, std::string::npos) << text;
  EXPECT_LT(one, two);
  EXPECT_EQ(text.find("rank 0:"), std::string::npos) << text;
  EXPECT_EQ(ExitCodeOf(outcome), 1);
  // The first rank to fail reported too: named with its exit and its report.
  outcome.ranks[2].reported_failure = "ValueError: bad";
  EXPECT_NE(FormatFailureSummary(outcome, tail)
                .find("rank 2 on localhost failed first: exit code 1: ValueError: bad; hvdrun "
                      "exits 1"),
            std::string::npos);
}

TEST(FailureSummaryTest, ARankThatReportedItsFailureAndExitedWithItsCodeWasNotStoppedByHvdrun) {
  // Both ranks raised; rank 0's end reached hvdrun first, which then sent rank 1 SIGTERM, but
  // rank 1 was already exiting with its own exception (exit code 1). Rank 2 reported too but
  // died of the SIGTERM: stopped by hvdrun.
  JobOutcome outcome;
  outcome.ranks = {Finished(0, Exited(1)), Finished(1, Exited(1), true),
                   Finished(2, Killed(SIGTERM), true)};
  for (RankOutcome& rank : outcome.ranks) rank.reported_failure = "ZeroDivisionError: x";
  outcome.first_failed_rank = 0;
  ApplyFailureReports(outcome);
  EXPECT_FALSE(outcome.ranks[1].stopped_by_hvdrun);
  EXPECT_TRUE(outcome.ranks[2].stopped_by_hvdrun);
  auto tail = [](int rank) { return std::vector<std::string>{"line of " + std::to_string(rank)}; };
  const std::string text = FormatFailureSummary(outcome, tail);
  EXPECT_NE(text.find("\n  1     localhost  exit code 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("last stderr lines of rank 1:\n  line of 1"), std::string::npos) << text;
  EXPECT_EQ(text.find("last stderr lines of rank 2:"), std::string::npos) << text;
  // Without a report, a rank hvdrun signalled that ended with a code of its own is not said to
  // be stopped by hvdrun either: hvdrun does not know whether its SIGTERM came first.
  outcome.ranks[1].reported_failure.reset();
  outcome.ranks[1].stopped_by_hvdrun = true;
  const std::string again = FormatFailureSummary(outcome, tail);
  EXPECT_NE(again.find("\n  1     localhost  exit code 1, exited as hvdrun was stopping it\n"),
            std::string::npos)
      << again;
  EXPECT_NE(again.find("\n  2     localhost  SIGTERM (signal 15), stopped by hvdrun\n"),
            std::string::npos)
      << again;
}

TEST(FailureSummaryTest, ARankWhoseShutdownFailedAPeerThatExitedFirstIsNamedWithItsCode) {
  // Rank 3 called sys.exit(7); its shutdown failed rank 0, which exited first (job control
  // then waited for rank 3 and made it the first failure).
  JobOutcome outcome;
  outcome.ranks = {Finished(0, Exited(1)), Finished(1, Killed(SIGTERM), true),
                   Finished(2, Killed(SIGTERM), true), Finished(3, Exited(7))};
  outcome.first_failed_rank = 3;
  outcome.exited_before_cause = 0;
  auto tail = [](int rank) { return std::vector<std::string>{"line of " + std::to_string(rank)}; };
  std::string text = FormatFailureSummary(outcome, tail);
  EXPECT_NE(text.find("rank 3 on localhost failed first: exit code 7 (its exit shut the job "
                      "down; rank 0, failed by that, exited first: exit code 1); hvdrun exits 7"),
            std::string::npos)
      << text;
  EXPECT_EQ(ExitCodeOf(outcome), 7);
  // Its lines first, then rank 0's (it failed on its own too)
  size_t three = text.find("last stderr lines of rank 3:");
  size_t zero = text.find("last stderr lines of rank 0:");
  ASSERT_NE(three, std::string::npos) << text;
  ASSERT_NE(zero, std::string::npos) << text;
  EXPECT_LT(three, zero);
  // With a report (an exception rather than sys.exit), the report follows the exit code
  outcome.ranks[3].reported_failure = "RuntimeError: boom";
  EXPECT_NE(FormatFailureSummary(outcome, tail)
                .find("failed first: exit code 7: RuntimeError: boom (its exit shut the job "
                      "down;"),
            std::string::npos);
}

TEST(FailureSummaryTest, ARankKilledBeforeThePeersThatFailedOnItIsNamedWithItsSignal) {
  // Rank 2 was SIGKILLed on another host; ranks 0 and 1 failed on losing it, and rank 0's exit
  // reached hvdrun first (job control followed the ranks they named to rank 2).
  JobOutcome outcome;
  outcome.ranks = {Finished(0, Exited(1)), Finished(1, Exited(1)), Finished(2, Killed(SIGKILL))};
  outcome.first_failed_rank = 2;
  outcome.exited_before_cause = 0;
  auto tail = [](int) { return std::vector<std::string>{}; };
  std::string text = FormatFailureSummary(outcome, tail);
  EXPECT_NE(text.find("rank 2 on localhost failed first: SIGKILL (signal 9) (its peers failed on "
                      "its death; rank 0, failed by that, exited first: exit code 1); hvdrun "
                      "exits 137"),
            std::string::npos)
      << text;
}

TEST(FailureSummaryTest, NamesFirstFailureAndShowsItsStderrTail) {
  JobOutcome outcome;
  outcome.ranks = {Finished(0, Killed(SIGTERM), /*stopped=*/true), Finished(1, Killed(SIGKILL))};
  outcome.first_failed_rank = 1;
  std::string text = FormatFailureSummary(outcome, [](int rank) {
    return rank == 1 ? std::vector<std::string>{"Traceback", "boom"}
                     : std::vector<std::string>{"x"};
  });
  EXPECT_NE(text.find("rank 1 on localhost failed first: SIGKILL (signal 9); hvdrun exits 137"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("SIGTERM (signal 15), stopped by hvdrun"), std::string::npos) << text;
  EXPECT_NE(text.find("last stderr lines of rank 1:\n  Traceback\n  boom\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("last stderr lines of rank 0"), std::string::npos) << text;
}

TEST(FailureSummaryTest, APythonRankThatReportedNothingIsNamedWithTheExceptionItsStderrShows) {
  // A plain torch.distributed script (no hvd to report it): rank 1 raised, rank 0 was stopped
  JobOutcome outcome;
  outcome.ranks = {Finished(0, Killed(SIGTERM), /*stopped=*/true), Finished(1, Exited(1))};
  outcome.first_failed_rank = 1;
  std::vector<std::string> traceback = {"  File \"t.py\", line 7, in <module>",
                                        "    raise ValueError(\"bad batch at step 2\")",
                                        "ValueError: bad batch at step 2"};
  auto text = [&](const std::vector<std::string>& lines) {
    return FormatFailureSummary(outcome, [&](int rank) {
      return rank == 1 ? lines : std::vector<std::string>{"  File \"t.py\"", "RuntimeError: x"};
    });
  };
  EXPECT_NE(text(traceback).find("rank 1 on localhost failed first: exit code 1: ValueError: bad "
                                 "batch at step 2; hvdrun exits 1"),
            std::string::npos)
      << text(traceback);
  // A dotted type after the frame's ^^^ marks, and a type without a message
  EXPECT_NE(text({"           ^^^^^^", "torch.cuda.OutOfMemoryError: CUDA out of memory."})
                .find("failed first: exit code 1: torch.cuda.OutOfMemoryError: CUDA out of "
                      "memory; hvdrun exits 1"),
            std::string::npos);
  EXPECT_NE(text({"    time.sleep(9)", "KeyboardInterrupt"})
                .find("failed first: exit code 1: KeyboardInterrupt; hvdrun exits 1"),
            std::string::npos);
  // torch 2.x's "[rankN]: " before every line, a message of several lines, and torch's warning
  // at exit after it (NCCL's refusal on the GPU machine, 2026-11-28)
  EXPECT_NE(
      text({"[rank1]:     work = group.allreduce([tensor], opts)",
            "[rank1]:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
            "[rank1]: torch.distributed.DistBackendError: NCCL error in: NCCLUtils.cpp:93, invalid "
            "usage, NCCL version 2.28.9",
            "[rank1]: ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
            "[rank1]: Last error:",
            "[rank1]: Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 60",
            "[rank1]:[W1128 15:18:07.525993852 ProcessGroupNCCL.cpp:1575] Warning: WARNING: "
            "destroy_process_group() was not called before program exit"})
          .find("failed first: exit code 1: torch.distributed.DistBackendError: NCCL error in: "
                "NCCLUtils.cpp:93, invalid usage, NCCL version 2.28.9; hvdrun exits 1"),
      std::string::npos);
  // Not a traceback's end: the headline has the exit alone
  for (const std::vector<std::string>& lines :
       {std::vector<std::string>{"loading", "error: cannot open data.bin"},
        std::vector<std::string>{"  indented", "cannot open: data.bin"},
        std::vector<std::string>{"  indented", "3 errors: see above"},
        std::vector<std::string>{"ValueError: alone"},
        std::vector<std::string>{"  File \"t.py\"", "ValueError: x", "  indented again"},
        std::vector<std::string>{"[rank1]:   File \"t.py\"", "[rank1]: not an exception line"},
        std::vector<std::string>{}}) {
    EXPECT_NE(text(lines).find("rank 1 on localhost failed first: exit code 1; hvdrun exits 1"),
              std::string::npos)
        << text(lines);
  }
  // The stderr never chooses the rank: a peer's traceback of the failed collective reads the
  // same; and a rank hvdrun stopped is named with its end alone
  outcome.ranks = {Finished(0, Exited(1)), Finished(1, Killed(SIGTERM), /*stopped=*/true)};
  outcome.first_failed_rank = 1;
  EXPECT_NE(text(traceback).find("rank 1 on localhost failed first: SIGTERM (signal 15); hvdrun "
                                 "exits 143"),
            std::string::npos)
      << text(traceback);
}

TEST(FailureSummaryTest, TorchsRankPrefixIsDroppedOnlyWhereItIsOne) {
  EXPECT_EQ(WithoutTorchRankPrefix("[rank12]: ValueError: x"), "ValueError: x");
  EXPECT_EQ(WithoutTorchRankPrefix("[rank0]:[W1128 15:18:07 a.cpp:1] w"),
            "[W1128 15:18:07 a.cpp:1] w");
  EXPECT_EQ(WithoutTorchRankPrefix("[rank0]:   File \"t.py\""), "  File \"t.py\"");
  for (const char* kept : {"[rank]: x", "[rankA]: x", "[rank1] x", "rank1: x", "[ranks1]: x"}) {
    EXPECT_EQ(WithoutTorchRankPrefix(kept), kept);
  }
}

TEST(FailureSummaryTest, TheSummaryShowsTheLastFiveOfTheLinesKept) {
  JobOutcome outcome;
  outcome.ranks = {Finished(0, Exited(3))};
  outcome.first_failed_rank = 0;
  std::vector<std::string> lines;
  for (int i = 0; i < 20; ++i) lines.push_back("line " + std::to_string(i));
  const std::string text = FormatFailureSummary(outcome, [&](int) { return lines; });
  EXPECT_NE(text.find("last stderr lines of rank 0:\n  line 15\n  line 16\n  line 17\n  line 18\n"
                      "  line 19\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("line 14"), std::string::npos) << text;
}

TEST(FailureSummaryTest, TheKernelsReasonForAKillIsGivenWithIt) {
  JobOutcome outcome;
  RankOutcome oom = Finished(1, Killed(SIGKILL));
  oom.kill_cause = "killed by the kernel's OOM killer (Out of memory; python3, anon-rss 9 kB)";
  outcome.ranks = {Finished(0, Killed(SIGTERM), /*stopped=*/true), oom};
  outcome.first_failed_rank = 1;
  std::string text = FormatFailureSummary(outcome, [](int) { return std::vector<std::string>{}; });
  EXPECT_NE(text.find("rank 1 on localhost failed first: SIGKILL (signal 9): killed by the "
                      "kernel's OOM killer (Out of memory; python3, anon-rss 9 kB); hvdrun exits "
                      "137"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("SIGKILL (signal 9): killed by the kernel's OOM killer (Out of memory; "
                      "python3, anon-rss 9 kB)  <- first failure"),
            std::string::npos)
      << text;
}

TEST(FailureSummaryTest, LostHostIsNamedEvenWhenASurvivorFailedFirst) {
  // Given a survivor that failed (its collective saw the peer vanish) before hvdrun's
  // heartbeat declared the peer's host lost
  JobOutcome outcome;
  RankOutcome lost = Finished(1, Exited(255), /*stopped=*/true);
  lost.host = "h2";
  lost.transport_error = "host h2 lost: no sign of life from its hvd-agent for 5 s";
  outcome.ranks = {Finished(0, Exited(1)), lost};
  outcome.first_failed_rank = 0;
  // Then the headline names both
  std::string text = FormatFailureSummary(outcome, [](int) { return std::vector<std::string>{}; });
  EXPECT_NE(text.find("rank 0 on localhost failed first: exit code 1; host h2 lost: no sign of "
                      "life from its hvd-agent for 5 s; hvdrun exits 1"),
            std::string::npos)
      << text;
}

TEST(FailureSummaryTest, LauncherSignalHeadline) {
  JobOutcome outcome;
  outcome.launcher_signal = SIGINT;
  outcome.ranks = {Finished(0, Killed(SIGKILL), true)};
  std::string text = FormatFailureSummary(outcome, [](int) { return std::vector<std::string>{}; });
  EXPECT_NE(text.find("hvdrun received SIGINT; hvdrun exits 130"), std::string::npos) << text;
}

}  // namespace
}  // namespace hvd::launcher
