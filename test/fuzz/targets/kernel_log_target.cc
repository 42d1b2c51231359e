// Target "kernel_log": the kernel log's messages as hvdrun and hvd-agent read them to say why a
// rank was killed (launcher/local/oom_kills.h). Input: a byte giving the number of OOM kills
// since the job started, two bytes of the rank's pid, a byte for how it ended (SIGKILL or exit
// code 137), then the messages, one per line. Found on its first run: "Killed process 09181"
// read as pid 9181 (the kernel writes no leading zero; such a line is not the kernel's).
#include <signal.h>
#include <sys/wait.h>

#include <string>
#include <vector>

#include "common/check.h"
#include "launcher/local/oom_kills.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzKernelLog(std::string_view input) {
  FuzzInput in(input);
  const uint64_t kills = in.Byte() % 8;
  const pid_t pid = static_cast<pid_t>((in.Byte() << 8) | in.Byte());
  const int status = in.Byte() % 2 ? W_EXITCODE(137, 0) : W_EXITCODE(0, SIGKILL);
  std::vector<std::string> log;
  while (!in.empty()) {
    const std::string message(in.Until('\n'));
    std::optional<launcher::OomKillRecord> kill = launcher::ParseOomKillMessage(message);
    log.push_back(message);
    if (!kill) continue;
    // The victim's pid is the number written after "Killed process ", and its name and the
    // constraint are pieces of the message.
    HVD_CHECK_GT(kill->pid, 0);
    HVD_CHECK(message.find("Killed process " + std::to_string(kill->pid) + " (") !=
              std::string::npos);
    HVD_CHECK(message.find(kill->name) != std::string::npos);
    HVD_CHECK(message.find(kill->constraint) == 0);
  }
  std::optional<std::string> why = launcher::ExplainKillFrom(pid, status, kills, log);
  HVD_CHECK(!why || kills > 0);
  if (why) {
    // Named only for a SIGKILL whose pid one of the last `kills` kill records gives.
    const bool named = why->rfind("killed by the kernel's OOM killer (", 0) == 0;
    HVD_CHECK(!named || WIFSIGNALED(status));
    HVD_CHECK(named || why->rfind("the kernel's OOM killer killed ", 0) == 0);
  }
  return "";  // nothing in a log is an error: a line is a kill record or not
}

}  // namespace hvd::fuzz
