#include "launcher/local/oom_kills.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <charconv>
#include <chrono>
#include <fstream>
#include <thread>

#include "launcher/outcome/exit_codes.h"
#include "launcher/outcome/wait_status.h"

namespace hvd::launcher {
namespace {

constexpr std::string_view kKilled = "Killed process ";
constexpr std::string_view kAnonRss = "anon-rss:";

// The decimal number `text` starts with; *used: its length.
std::optional<uint64_t> ParseLeadingNumber(std::string_view text, size_t* used) {
  uint64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end == text.data()) return std::nullopt;
  *used = static_cast<size_t>(end - text.data());
  return value;
}

// A record of /dev/kmsg: "<prio>,<seq>,<usec>,<flags>[,...];<message>\n" and, for some, a
// dictionary of " KEY=value" lines after it. The message is what lies between.
std::string_view RecordMessage(std::string_view record) {
  const size_t semi = record.find(';');
  if (semi == std::string_view::npos) return {};
  std::string_view message = record.substr(semi + 1);
  const size_t newline = message.find('\n');
  return newline == std::string_view::npos ? message : message.substr(0, newline);
}

bool KilledBySigkill(int wait_status) {
  return WIFSIGNALED(wait_status) && WTERMSIG(wait_status) == SIGKILL;
}

// Killed by SIGKILL, or a shell that reports its child so (exit code 137): hvdrun's code 137.
bool EndedAsKilled(int wait_status) {
  return ExitCodeOfWaitStatus(wait_status) == kExitSignalBase + SIGKILL;
}

}  // namespace

std::optional<uint64_t> OomKillCount() {
  std::ifstream vmstat("/proc/vmstat");
  std::string name;
  uint64_t value = 0;
  while (vmstat >> name >> value) {
    if (name == "oom_kill") return value;
  }
  return std::nullopt;
}

std::optional<OomKillRecord> ParseOomKillMessage(std::string_view message) {
  const size_t at = message.find(kKilled);
  if (at == std::string_view::npos) return std::nullopt;
  OomKillRecord record;
  std::string_view rest = message.substr(at + kKilled.size());
  if (!rest.empty() && rest[0] == '0') return std::nullopt;  // the kernel writes no leading 0
  size_t used = 0;
  std::optional<uint64_t> pid = ParseLeadingNumber(rest, &used);
  if (!pid || *pid == 0 || *pid > static_cast<uint64_t>(INT32_MAX)) return std::nullopt;
  record.pid = static_cast<pid_t>(*pid);
  rest.remove_prefix(used);
  if (rest.size() < 3 || rest.substr(0, 2) != " (") return std::nullopt;
  // The command name may itself hold ") ": the name ends where the fields begin.
  const size_t fields = rest.find(") total-vm:", 2);
  const size_t close = fields != std::string_view::npos ? fields : rest.rfind(')');
  if (close == std::string_view::npos || close < 2) return std::nullopt;
  record.name = std::string(rest.substr(2, close - 2));
  std::string_view before = message.substr(0, at);
  while (!before.empty() && (before.back() == ' ' || before.back() == ':')) before.remove_suffix(1);
  record.constraint = std::string(before);
  const size_t rss = rest.find(kAnonRss);
  if (rss != std::string_view::npos) {
    std::optional<uint64_t> kb = ParseLeadingNumber(rest.substr(rss + kAnonRss.size()), &used);
    if (kb) record.anon_rss_kb = *kb;
  }
  return record;
}

std::optional<std::vector<std::string>> ReadKernelLog() {
  const int fd = ::open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::vector<std::string> messages;
  char buffer[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof(buffer));
    if (n > 0) {
      messages.emplace_back(RecordMessage(std::string_view(buffer, static_cast<size_t>(n))));
      continue;
    }
    if (n < 0 && (errno == EINTR || errno == EPIPE)) continue;  // EPIPE: records overwritten
    break;  // EAGAIN: the end of the log; another error: stop reading
  }
  ::close(fd);
  return messages;
}

std::optional<std::string> ExplainKillFrom(pid_t pid, int wait_status, uint64_t kills_since_start,
                                           const std::optional<std::vector<std::string>>& log) {
  if (kills_since_start == 0 || !EndedAsKilled(wait_status)) {
    return std::nullopt;
  }
  if (log && KilledBySigkill(wait_status) && pid > 0) {
    // The newest kills_since_start kill records: those of the kills since the job started.
    // None of them this pid: the OOM killer did not kill this rank.
    uint64_t seen = 0;
    for (auto it = log->rbegin(); it != log->rend() && seen < kills_since_start; ++it) {
      std::optional<OomKillRecord> kill = ParseOomKillMessage(*it);
      if (!kill) continue;
      ++seen;
      if (kill->pid != pid) continue;
      std::string why = "killed by the kernel's OOM killer (";
      if (!kill->constraint.empty()) why += kill->constraint + "; ";
      why += kill->name;
      if (kill->anon_rss_kb) why += ", anon-rss " + std::to_string(*kill->anon_rss_kb) + " kB";
      return why + ")";
    }
    return std::nullopt;
  }
  const bool one = kills_since_start == 1;
  return "the kernel's OOM killer killed " + std::to_string(kills_since_start) +
         (one ? " process" : " processes") + " on this host during the job (dmesg names " +
         (one ? "it)" : "them)");
}

std::optional<std::string> ExplainKill(pid_t pid, int wait_status,
                                       std::optional<uint64_t> count_at_start) {
  if (!count_at_start || !EndedAsKilled(wait_status)) {
    return std::nullopt;
  }
  const std::optional<uint64_t> now = OomKillCount();
  if (!now || *now <= *count_at_start) return std::nullopt;
  const uint64_t kills = *now - *count_at_start;
  if (!KilledBySigkill(wait_status)) return ExplainKillFrom(pid, wait_status, kills, std::nullopt);
  std::optional<std::vector<std::string>> log = ReadKernelLog();
  std::optional<std::string> why = ExplainKillFrom(pid, wait_status, kills, log);
  if (!why && log) {
    // The kernel counts a kill and sends the SIGKILL before it logs the kill: a reader woken
    // by the victim's death may be ahead of the record. Once more, a moment later.
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    log = ReadKernelLog();
    why = ExplainKillFrom(pid, wait_status, kills, log);
  }
  return why;
}

}  // namespace hvd::launcher
