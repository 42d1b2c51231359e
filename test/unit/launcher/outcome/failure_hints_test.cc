#include "launcher/outcome/failure_hints.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

namespace hvd::launcher {
namespace {

JobOutcome RanksOn(int n) {
  JobOutcome outcome;
  for (int r = 0; r < n; ++r) {
    RankOutcome rank;
    rank.rank = r;
    rank.host = "localhost";
    rank.started = rank.finished = true;
    rank.wait_status = 1 << 8;
    outcome.ranks.push_back(rank);
  }
  outcome.first_failed_rank = 0;
  return outcome;
}

// A machine like a Debian one with pyenv's python3 first on PATH and hvd in its build tree.
HintContext PyenvMachine() {
  HintContext context;
  context.program = "python3";
  context.program_path = "/root/.pyenv/shims/python3";
  context.package_dir = "/src/hvd/build/python";
  context.package_dir_is_build_tree = true;
  context.system_python_has = [](const std::string& m) { return m == "torch" || m == "numpy"; };
  return context;
}

StderrTailFn Tails(std::map<int, std::vector<std::string>> tails) {
  return [tails](int rank) {
    auto it = tails.find(rank);
    return it == tails.end() ? std::vector<std::string>{} : it->second;
  };
}

const std::vector<std::string> kNoTorch = {
    "Traceback (most recent call last):", "  File \"train.py\", line 1, in <module>",
    "    import torch", "ModuleNotFoundError: No module named 'torch'"};

TEST(FailureHintsTest, TorchMissingFromAnotherPythonPointsAtDebiansInterpreter) {
  // Given ranks 0 and 1 of 3 that could not import torch under pyenv's python3
  const std::string hints =
      FormatFailureHints(RanksOn(3), Tails({{0, kNoTorch}, {1, kNoTorch}}), PyenvMachine());
  // Then one hint names both ranks, the interpreter they ran and the one to give instead
  EXPECT_EQ(hints,
            "hint: ranks 0, 1: No module named 'torch'. Debian installs python3-torch for "
            "/usr/bin/python3 alone, and the ranks run `python3` (/root/.pyenv/shims/python3 on "
            "hvdrun's PATH): give /usr/bin/python3 in its place.\n");
}

TEST(FailureHintsTest, AScriptStartingAnotherInterpreterIsToldWhatItsHashBangDoes) {
  HintContext context = PyenvMachine();
  context.program = "./train.py";
  context.program_path = "./train.py";
  EXPECT_EQ(FormatFailureHints(RanksOn(1), Tails({{0, kNoTorch}}), context),
            "hint: rank 0: No module named 'torch'. Debian installs python3-torch for "
            "/usr/bin/python3 alone, and the command (./train.py) starts another interpreter: "
            "have it start /usr/bin/python3 (#!/usr/bin/env python3 takes the first python3 on "
            "PATH).\n");
}

TEST(FailureHintsTest, NoHintWhereTheAdviceWouldBeWrong) {
  // Debian's own interpreter lacking torch, a module Debian's interpreter lacks too, a remote
  // rank (its PATH is another machine's), a rank that never started: nothing to say
  HintContext system = PyenvMachine();
  system.program_is_system_python = true;
  EXPECT_EQ(FormatFailureHints(RanksOn(1), Tails({{0, kNoTorch}}), system), "");
  EXPECT_EQ(
      FormatFailureHints(RanksOn(1), Tails({{0, {"ModuleNotFoundError: No module named 'wandb'"}}}),
                         PyenvMachine()),
      "");
  JobOutcome unstarted = RanksOn(1);
  unstarted.ranks[0].started = false;
  EXPECT_EQ(FormatFailureHints(unstarted, Tails({{0, kNoTorch}}), PyenvMachine()), "");
  EXPECT_EQ(FormatFailureHints(RanksOn(2), Tails({{0, {"RuntimeError: boom"}}}), PyenvMachine()),
            "");
}

TEST(FailureHintsTest, RemoteRanksAreToldWhatToCheckOnTheirHost) {
  // Given 4 ranks, 2 here and 2 on each of two remote hosts, none of which imported torch
  JobOutcome outcome = RanksOn(6);
  for (int r = 2; r < 6; ++r) {
    outcome.ranks[r].remote = true;
    outcome.ranks[r].host = r < 4 ? "h1" : "h2";
  }
  std::map<int, std::vector<std::string>> tails;
  for (int r = 0; r < 6; ++r) tails[r] = kNoTorch;
  const std::string hints = FormatFailureHints(outcome, Tails(tails), PyenvMachine());
  // Then this machine's ranks get the local hint, and each host one naming it and what to check
  // there (hvdrun cannot see that host's PATH or packages)
  EXPECT_EQ(hints,
            "hint: ranks 0, 1: No module named 'torch'. Debian installs python3-torch for "
            "/usr/bin/python3 alone, and the ranks run `python3` (/root/.pyenv/shims/python3 on "
            "hvdrun's PATH): give /usr/bin/python3 in its place.\n"
            "hint: ranks 2, 3 on h1: No module named 'torch'. The ranks there run `python3` as "
            "hvdrun's PATH (passed on) finds it on h1 (here: /root/.pyenv/shims/python3), with "
            "that host's packages: check on h1 with command -v python3 and python3 -c 'import "
            "torch'; Debian installs python3-torch for /usr/bin/python3 alone, so give "
            "/usr/bin/python3 to run it on every host.\n"
            "hint: ranks 4, 5 on h2: No module named 'torch'. The ranks there run `python3` as "
            "hvdrun's PATH (passed on) finds it on h2 (here: /root/.pyenv/shims/python3), with "
            "that host's packages: check on h2 with command -v python3 and python3 -c 'import "
            "torch'; Debian installs python3-torch for /usr/bin/python3 alone, so give "
            "/usr/bin/python3 to run it on every host.\n");
  // Debian's own interpreter given: the package is missing on that host
  HintContext system = PyenvMachine();
  system.program = system.program_path = "/usr/bin/python3";
  system.program_is_system_python = true;
  JobOutcome one_remote = RanksOn(2);
  one_remote.ranks[1].remote = true;
  one_remote.ranks[1].host = "h1";
  EXPECT_EQ(FormatFailureHints(one_remote, Tails({{1, kNoTorch}}), system),
            "hint: rank 1 on h1: No module named 'torch'. /usr/bin/python3 there lacks it: "
            "install python3-torch on h1 (Debian's package; every host runs the same "
            "command).\n");
  // hvd itself missing there, or its extension
  EXPECT_EQ(FormatFailureHints(one_remote,
                               Tails({{1, {"ModuleNotFoundError: No module named 'horovod'"}}}),
                               PyenvMachine()),
            "hint: rank 1 on h1: No module named 'horovod'. hvd must be importable on every "
            "host: install it on h1 (at the same path as here), or export PYTHONPATH naming "
            "where it is there (hvdrun passes PYTHONPATH on to remote ranks); check with "
            "python3 -c 'import horovod' on h1.\n");
  EXPECT_NE(FormatFailureHints(one_remote,
                               Tails({{1, {"ModuleNotFoundError: No module named 'hvd._hvd_c'"}}}),
                               PyenvMachine())
                .find("rank 1 on h1: No module named 'hvd._hvd_c'. hvd's package there was found"),
            std::string::npos);
  // A module this machine's Debian Python lacks too, or a command that is not Python: nothing
  EXPECT_EQ(
      FormatFailureHints(one_remote, Tails({{1, {"ModuleNotFoundError: No module named 'wandb'"}}}),
                         PyenvMachine()),
      "");
  HintContext shell = PyenvMachine();
  shell.program = "./train.sh";
  EXPECT_EQ(FormatFailureHints(one_remote, Tails({{1, kNoTorch}}), shell), "");
}

TEST(FailureHintsTest, HvdMissingSaysWhereThisHvdrunsPackageIs) {
  // Given ranks that could not import horovod (the build tree's package not on their path)
  const std::vector<std::string> no_horovod = {"    import horovod.torch as hvd",
                                               "ModuleNotFoundError: No module named 'horovod'"};
  std::map<int, std::vector<std::string>> tails;
  for (int r = 0; r < 16; ++r) tails[r] = no_horovod;
  EXPECT_EQ(FormatFailureHints(RanksOn(16), Tails(tails), PyenvMachine()),
            "hint: ranks 0, 1, 2, ... (16 of them): No module named 'horovod'. hvd provides it; "
            "this hvdrun's package is in its build tree, /src/hvd/build/python, which Python "
            "does not search: run PYTHONPATH=/src/hvd/build/python hvdrun ... (hvdrun passes "
            "PYTHONPATH on to the ranks), or install hvd (cmake --install).\n");
  // An installed package that the interpreter does not search
  HintContext installed = PyenvMachine();
  installed.package_dir = "/usr/local/lib/python3.11/dist-packages";
  installed.package_dir_is_build_tree = false;
  EXPECT_EQ(
      FormatFailureHints(RanksOn(1), Tails({{0, {"ModuleNotFoundError: No module named 'hvd'"}}}),
                         installed),
      "hint: rank 0: No module named 'hvd'. hvd provides it; this hvdrun's package is "
      "installed in /usr/local/lib/python3.11/dist-packages, which `python3` "
      "(/root/.pyenv/shims/python3 on hvdrun's PATH) does not search: run the interpreter "
      "hvd was built for, or put that folder on PYTHONPATH.\n");
  // Its extension missing: built for another interpreter
  EXPECT_EQ(FormatFailureHints(RanksOn(1),
                               Tails({{0, {"ModuleNotFoundError: No module named 'hvd._hvd_c'"}}}),
                               installed),
            "hint: rank 0: No module named 'hvd._hvd_c'. hvd's package was found but not this "
            "part of it: its extension is built for one interpreter (HVD_PYTHON_EXECUTABLE, "
            "/usr/bin/python3 by default), and the ranks run `python3` "
            "(/root/.pyenv/shims/python3 on hvdrun's PATH).\n");
  // No package found beside hvdrun: nothing useful to add
  HintContext nowhere = PyenvMachine();
  nowhere.package_dir.clear();
  EXPECT_EQ(FormatFailureHints(RanksOn(1), Tails({{0, no_horovod}}), nowhere), "");
}

TEST(FailureHintsTest, TwoRanksOnOneGpuAreToldToTakeOneEach) {
  // torch.distributed's NCCL error, ending with NCCL's own line, on both ranks of a DDP script
  // that never called torch.cuda.set_device
  const std::vector<std::string> nccl = {
      "torch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:1970, invalid "
      "usage (run with NCCL_DEBUG=WARN for details), NCCL version 2.28.9",
      "ncclInvalidUsage: This usually reflects invalid usage of NCCL library.",
      "Last error:", "Duplicate GPU detected : rank 1 and rank 0 both on CUDA device 1000"};
  const std::string hints =
      FormatFailureHints(RanksOn(3), Tails({{0, nccl}, {1, nccl}}), PyenvMachine());
  EXPECT_EQ(hints,
            "hint: ranks 0, 1: NCCL found two ranks on one GPU (Duplicate GPU detected). Each "
            "rank needs a GPU of its own: call torch.cuda.set_device(int(os.environ["
            "'LOCAL_RANK'])) (hvd.local_rank() in a Horovod script) before the first NCCL call, "
            "and start no more ranks on a host than it has GPUs; NCCL runs several ranks on one "
            "GPU only when each declares a host of its own with NCCL_HOSTID (hvd's docs/gpu.md, "
            "\"Several NCCL ranks on one GPU\").\n");
  // Not from other lines about GPUs
  EXPECT_EQ(FormatFailureHints(RanksOn(1), Tails({{0, {"RuntimeError: CUDA out of memory."}}}),
                               PyenvMachine()),
            "");
}

TEST(FailureHintsTest, AnExportedMasterPortInUseIsSaidToBeTheUsers) {
  // torch's store on rank 0 could not listen on the port the user exported
  const std::vector<std::string> bind = {
      "  RuntimeError: The server socket has failed to listen on any local network address. The "
      "server socket has failed to bind to [::]:29511 (errno: 98 - Address already in use). The "
      "server socket has failed to bind to 0.0.0.0:29511 (errno: 98 - Address already in use)."};
  HintContext context = PyenvMachine();
  context.users_master_port = "29511";
  EXPECT_EQ(FormatFailureHints(RanksOn(2), Tails({{0, bind}}), context),
            "hint: rank 0: MASTER_PORT 29511, exported in hvdrun's environment and given to every "
            "rank as it is, is in use on localhost (Address already in use): another process "
            "holds it there (a job still running?). Export a free port, or unset MASTER_PORT and "
            "hvdrun picks a free one.\n");
  // Another port's failure, or a port hvdrun picked: not the user's doing
  context.users_master_port = "29500";
  EXPECT_EQ(FormatFailureHints(RanksOn(2), Tails({{0, bind}}), context), "");
  context.users_master_port = "";
  EXPECT_EQ(FormatFailureHints(RanksOn(2), Tails({{0, bind}}), context), "");
}

TEST(FailureHintsTest, EachCauseOnceInTheOrderSeen) {
  const std::string hints = FormatFailureHints(
      RanksOn(3),
      Tails({{0, {"ModuleNotFoundError: No module named 'numpy'"}},
             {1, kNoTorch},
             {2, {"ModuleNotFoundError: No module named 'numpy.linalg'", "later line"}}}),
      PyenvMachine());
  EXPECT_EQ(hints.rfind("hint: rank 0: No module named 'numpy'. Debian installs python3-numpy", 0),
            0u)
      << hints;
  EXPECT_NE(hints.find("\nhint: rank 1: No module named 'torch'."), std::string::npos) << hints;
  EXPECT_NE(hints.find("\nhint: rank 2: No module named 'numpy.linalg'. Debian installs "
                       "python3-numpy"),
            std::string::npos)
      << hints;
}

// A rank that exits 0 while the others still run collectives shuts the job down: the failing
// ranks' errors name it, and the hint says what to do about uneven work.
TEST(FailureHintsTest, ARankThatFinishedEarlyIsToldAbout) {
  // Ranks 0, 2 and 3 failed; their runtimes told hvdrun that rank 1's shutdown failed their
  // collectives ("Shut down by rank 1" in their errors), and rank 1 exited 0.
  JobOutcome outcome = RanksOn(4);
  outcome.ranks[1].wait_status = 0;  // exited 0
  for (int r : {0, 2, 3}) outcome.ranks[static_cast<size_t>(r)].shut_down_by = 1;
  const StderrTailFn no_tails = Tails({});
  const std::string text = FormatFailureHints(outcome, no_tails, PyenvMachine());
  EXPECT_NE(text.find("hint: rank 1 exited 0 (or called hvd.shutdown()) while ranks 0, 2, 3 still "
                      "ran collectives, which shut the job down: every rank must run the same "
                      "collectives. A rank with less work (uneven data) can call hvd.join()"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("hint: rank 3"), std::string::npos) << "rank 3 failed: " << text;
  // No hint for an elastic job, whose rows are workers, not the ranks the runtimes name; nor
  // where the named rank itself failed (the summary names it).
  outcome.unit = "worker";
  EXPECT_EQ(FormatFailureHints(outcome, no_tails, PyenvMachine()), "");
  outcome.unit = "rank";
  outcome.ranks[1].wait_status = 1 << 8;
  EXPECT_EQ(FormatFailureHints(outcome, no_tails, PyenvMachine()), "");
}

}  // namespace
}  // namespace hvd::launcher
