#include "launcher/outcome/failure_hints.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "launcher/outcome/wait_status.h"

namespace hvd::launcher {
namespace {

// The module of the last "No module named 'x.y'" among `lines` ("x.y"), if any.
std::optional<std::string> MissingModule(const std::vector<std::string>& lines) {
  constexpr std::string_view kNeedle = "No module named '";
  for (auto line = lines.rbegin(); line != lines.rend(); ++line) {
    const size_t at = line->find(kNeedle);
    if (at == std::string::npos) continue;
    const size_t begin = at + kNeedle.size();
    const size_t end = line->find('\'', begin);
    if (end == std::string::npos || end == begin) continue;
    return line->substr(begin, end - begin);
  }
  return std::nullopt;
}

// "rank 3", "ranks 0, 1, 2", "ranks 0, 1, 2, ... (16 of them)".
std::string RankList(const std::vector<int>& ranks) {
  constexpr size_t kShown = 3;
  std::string text = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size() && i < kShown; ++i) {
    text += (i ? ", " : "") + std::to_string(ranks[i]);
  }
  if (ranks.size() > kShown) text += ", ... (" + std::to_string(ranks.size()) + " of them)";
  return text;
}

bool LooksLikePython(const std::string& program) {
  const size_t slash = program.rfind('/');
  return program.compare(slash == std::string::npos ? 0 : slash + 1, 6, "python") == 0;
}

// "`python3` (/root/.pyenv/shims/python3 on hvdrun's PATH)".
std::string ProgramWords(const HintContext& context) {
  std::string text = "`" + context.program + "`";
  if (!context.program_path.empty() && context.program_path != context.program) {
    text += " (" + context.program_path + " on hvdrun's PATH)";
  }
  return text;
}

std::optional<std::string> HintFor(const std::string& module, const HintContext& context) {
  const std::string top = module.substr(0, module.find('.'));
  const std::string head = ": No module named '" + module + "'. ";
  if (top == "hvd" && module != top) {
    return head +
           "hvd's package was found but not this part of it: its extension is built for "
           "one interpreter (HVD_PYTHON_EXECUTABLE, /usr/bin/python3 by default), and "
           "the ranks run " +
           ProgramWords(context) + ".";
  }
  if (top == "hvd" || top == "horovod") {
    if (context.package_dir.empty()) return std::nullopt;
    const std::string text = head + "hvd provides it; this hvdrun's package ";
    if (context.package_dir_is_build_tree) {
      return text + "is in its build tree, " + context.package_dir +
             ", which Python does not search: run PYTHONPATH=" + context.package_dir +
             " hvdrun ... (hvdrun passes PYTHONPATH on to the ranks), or install hvd "
             "(cmake --install).";
    }
    return text + "is installed in " + context.package_dir + ", which " + ProgramWords(context) +
           " does not search: run the interpreter hvd was built for, or put that folder on "
           "PYTHONPATH.";
  }
  if (context.program_is_system_python || !context.system_python_has ||
      !context.system_python_has(top)) {
    return std::nullopt;
  }
  std::string text = head + "Debian installs python3-" + top + " for /usr/bin/python3 alone";
  if (LooksLikePython(context.program)) {
    return text + ", and the ranks run " + ProgramWords(context) +
           ": give /usr/bin/python3 in its place.";
  }
  return text + ", and the command (" + context.program +
         ") starts another interpreter: have it start /usr/bin/python3 (#!/usr/bin/env python3 "
         "takes the first python3 on PATH).";
}

// The hint for ranks on another host, where hvdrun knows nothing of the interpreter PATH finds
// or the packages it has: what to check there, and the causes hvdrun's own machine shows.
std::optional<std::string> RemoteHintFor(const std::string& module, const std::string& host,
                                         const HintContext& context) {
  const std::string top = module.substr(0, module.find('.'));
  const std::string head = " on " + host + ": No module named '" + module + "'. ";
  const std::string check = "python3 -c 'import " + module + "'";
  if (top == "hvd" && module != top) {
    return head +
           "hvd's package there was found but not this part of it: its extension is "
           "built for one interpreter, and the ranks there ran `" +
           context.program + "`; check with " + check + " on " + host + ".";
  }
  if (top == "hvd" || top == "horovod") {
    return head + "hvd must be importable on every host: install it on " + host +
           " (at the same path as here), or export PYTHONPATH naming where it is there "
           "(hvdrun passes PYTHONPATH on to remote ranks); check with " +
           check + " on " + host + ".";
  }
  if (!context.system_python_has || !context.system_python_has(top)) return std::nullopt;
  if (context.program == "/usr/bin/python3") {
    return head + "/usr/bin/python3 there lacks it: install python3-" + top + " on " + host +
           " (Debian's package; every host runs the same command).";
  }
  if (!LooksLikePython(context.program)) return std::nullopt;
  std::string here;
  if (!context.program_path.empty() && context.program_path != context.program) {
    here = " (here: " + context.program_path + ")";
  }
  return head + "The ranks there run `" + context.program +
         "` as hvdrun's PATH (passed on) finds it on " + host + here +
         ", with that host's packages: check on " + host + " with command -v " + context.program +
         " and " + check + "; Debian installs python3-" + top +
         " for /usr/bin/python3 alone, so give /usr/bin/python3 to run it on every host.";
}

// Whether any of a rank's last stderr lines has `needle`.
bool AnyLineHas(const std::vector<std::string>& lines, std::string_view needle) {
  return std::any_of(lines.begin(), lines.end(), [&](const std::string& line) {
    return line.find(needle) != std::string::npos;
  });
}

// NCCL's refusal of two ranks of one communicator on one device: torch.distributed's NCCL
// backend ends its error with NCCL's "Duplicate GPU detected : rank 1 and rank 0 both on CUDA
// device 1000" (a script that never called torch.cuda.set_device, or more ranks on a host than
// it has GPUs). hvd's own NCCL path does not get there: ranks that share a GPU stage through the
// host (docs/gpu.md).
constexpr std::string_view kDuplicateGpu = "Duplicate GPU detected";

constexpr char kDuplicateGpuHint[] =
    ": NCCL found two ranks on one GPU (Duplicate GPU detected). Each rank needs a GPU of its "
    "own: call torch.cuda.set_device(int(os.environ['LOCAL_RANK'])) (hvd.local_rank() in a "
    "Horovod script) before the first NCCL call, and start no more ranks on a host than it has "
    "GPUs; NCCL runs several ranks on one GPU only when each declares a host of its own with "
    "NCCL_HOSTID (hvd's docs/gpu.md, \"Several NCCL ranks on one GPU\").";

}  // namespace

std::string FormatFailureHints(const JobOutcome& outcome, const StderrTailFn& stderr_tail,
                               const HintContext& context) {
  // Keyed by (module, host): "" for this machine's ranks, the host's name for another's (its
  // PATH and packages are its own, so it gets a hint of its own).
  using Key = std::pair<std::string, std::string>;
  std::map<Key, std::vector<int>> ranks_by_cause;
  std::vector<Key> order;  // the causes in the order first seen
  std::vector<int> duplicate_gpu;
  // torch's store (TCPStore, on rank 0's host) failing to listen on the exported MASTER_PORT:
  // "... failed to bind to 0.0.0.0:29500 (errno: 98 - Address already in use)".
  const std::string port_in_use =
      ":" + context.users_master_port + " (errno: 98 - Address already in use)";
  const RankOutcome* store_failed = nullptr;  // one store, on one host
  // A rank that exited 0 (or called hvd.shutdown()) while its peers still ran collectives ->
  // the failing ranks whose collectives its shutdown failed.
  std::map<int, std::vector<int>> finished_early;
  for (const RankOutcome& rank : outcome.ranks) {
    if (!rank.started) continue;
    const std::vector<std::string> tail = stderr_tail(rank.rank);
    // (Elastic rows are workers, whose ranks change from round to round: not for them.)
    if (outcome.unit == "rank" && rank.finished && !WaitStatusIsSuccess(rank.wait_status) &&
        rank.shut_down_by && *rank.shut_down_by != rank.rank &&
        static_cast<size_t>(*rank.shut_down_by) < outcome.ranks.size()) {
      const RankOutcome& peer = outcome.ranks[static_cast<size_t>(*rank.shut_down_by)];
      if (peer.finished && WaitStatusIsSuccess(peer.wait_status)) {
        finished_early[peer.rank].push_back(rank.rank);
      }
    }
    if (AnyLineHas(tail, kDuplicateGpu)) duplicate_gpu.push_back(rank.rank);
    if (!store_failed && !context.users_master_port.empty() && AnyLineHas(tail, port_in_use)) {
      store_failed = &rank;
    }
    std::optional<std::string> module = MissingModule(tail);
    if (!module) continue;
    Key key{*module, rank.remote ? rank.host : std::string()};
    std::vector<int>& ranks = ranks_by_cause[key];
    if (ranks.empty()) order.push_back(key);
    ranks.push_back(rank.rank);
  }
  std::string text;
  if (store_failed) {
    text += "hint: " + RankList({store_failed->rank}) + ": MASTER_PORT " +
            context.users_master_port +
            ", exported in hvdrun's environment and given to every rank as it is, is in use on " +
            store_failed->host +
            " (Address already in use): another process holds it there (a job still running?). "
            "Export a free port, or unset MASTER_PORT and hvdrun picks a free one.\n";
  }
  if (!duplicate_gpu.empty()) text += "hint: " + RankList(duplicate_gpu) + kDuplicateGpuHint + "\n";
  for (const auto& [by, failed] : finished_early) {
    text += "hint: rank " + std::to_string(by) + " exited 0 (or called hvd.shutdown()) while " +
            RankList(failed) +
            " still ran collectives, which shut the job down: every rank must run the same "
            "collectives. A rank with less work (uneven data) can call hvd.join() when it is "
            "done, which has it take part in the others' remaining allreduces until every rank "
            "has joined, or wait at hvd.barrier() before it exits.\n";
  }
  for (const Key& key : order) {
    const auto& [module, host] = key;
    std::optional<std::string> hint =
        host.empty() ? HintFor(module, context) : RemoteHintFor(module, host, context);
    if (hint) text += "hint: " + RankList(ranks_by_cause[key]) + *hint + "\n";
  }
  return text;
}

}  // namespace hvd::launcher
