#ifndef HVD_LAUNCHER_OUTCOME_FAILURE_HINTS_H_
#define HVD_LAUNCHER_OUTCOME_FAILURE_HINTS_H_

#include <functional>
#include <string>

#include "launcher/outcome/failure_summary.h"
#include "launcher/outcome/job_outcome.h"

namespace hvd::launcher {

// What the hints know of hvdrun's machine, found there by the caller (LocalHintContext,
// launcher/local/hint_context.h); plain data, so the hints themselves stay pure.
struct HintContext {
  std::string program;       // the ranks' command's first word, as given ("python3")
  std::string program_path;  // where hvdrun's PATH finds it ("" when nowhere)
  // Whether program_path is Debian's /usr/bin/python3 (after links).
  bool program_is_system_python = false;
  // The folder holding the `hvd` Python package that goes with this hvdrun: the build tree's
  // <build>/python, or the dist-packages folder it was installed to; "" when not found.
  std::string package_dir;
  bool package_dir_is_build_tree = false;
  // Whether Debian's /usr/bin/python3 has this top-level module (python3-torch installs torch
  // for it alone).
  std::function<bool(const std::string& module)> system_python_has;
  // MASTER_PORT as exported in hvdrun's environment, which every rank gets as it is ("" when
  // hvdrun picks a free port).
  std::string users_master_port;
};

// "hint: ..." lines (each ending in a newline; "" when none applies) after a failed job's
// summary, for the set-up mistakes a rank's last stderr lines show, on ranks that failed on
// their own (a remote host's ranks get what to check on that host: hvdrun knows neither its
// PATH nor its packages):
//   - `ModuleNotFoundError: No module named 'torch'` (or any module Debian's /usr/bin/python3
//     has) from another interpreter: Debian installs python3-torch for /usr/bin/python3 alone,
//     and `python3` on PATH may be pyenv's, conda's or a venv's;
//   - `No module named 'hvd'` or `'horovod'`: where this hvdrun's package is, and how to put
//     it on the ranks' path;
//   - NCCL's `Duplicate GPU detected` (torch.distributed with two ranks on one device): one GPU
//     per rank, torch.cuda.set_device, or NCCL_HOSTID to share one;
//   - torch's store failing to bind the MASTER_PORT the user exported (Address already in
//     use): another process holds it; a free one, or none exported and hvdrun picks one.
//   - a rank that exited 0 while others still ran collectives (their runtimes named it to
//     hvdrun: RankOutcome::shut_down_by): every rank runs the same collectives; hvd.join() for
//     uneven work, or a barrier before the exit.
// One hint per cause (and remote host), naming the ranks it was seen on.
std::string FormatFailureHints(const JobOutcome& outcome, const StderrTailFn& stderr_tail,
                               const HintContext& context);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_OUTCOME_FAILURE_HINTS_H_
