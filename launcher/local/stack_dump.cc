#include "launcher/local/stack_dump.h"

#include <dirent.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <fstream>
#include <set>
#include <sstream>
#include <utility>

namespace hvd::launcher {
namespace {

// A number as the kernel and hvd's runtime write one: decimal digits, no sign, no leading zero
// ("040" is not 40: no such line is the kernel's).
template <typename T>
bool ParseNumber(std::string_view text, T* out) {
  if (text.empty() || text[0] < '0' || text[0] > '9' || (text[0] == '0' && text.size() > 1)) {
    return false;
  }
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), *out);
  return ec == std::errc() && end == text.data() + text.size();
}

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// This host's processes of group `group`, with whether each catches `signo`.
std::vector<ProcessEntry> ProcessesOfGroup(pid_t group, int signo) {
  std::vector<ProcessEntry> out;
  DIR* proc = ::opendir("/proc");
  if (proc == nullptr) return out;
  while (const dirent* entry = ::readdir(proc)) {
    pid_t pid = -1;
    if (!ParseNumber(std::string_view(entry->d_name), &pid) || pid <= 0) continue;
    const std::string dir = std::string("/proc/") + entry->d_name;
    std::optional<std::string> stat = ReadFile(dir + "/stat");
    if (!stat) continue;  // ended meanwhile
    std::optional<ProcessEntry> process = ParseProcStat(*stat);
    if (!process || process->pgrp != group) continue;
    std::optional<std::string> status = ReadFile(dir + "/status");
    process->catches = status && StatusCatches(*status, signo);
    out.push_back(*process);
  }
  ::closedir(proc);
  return out;
}

}  // namespace

std::vector<pid_t> OutermostCatchers(const std::vector<ProcessEntry>& processes, pid_t group) {
  std::set<pid_t> catchers;
  for (const ProcessEntry& p : processes) {
    if (p.pgrp == group && p.catches) catchers.insert(p.pid);
  }
  std::vector<pid_t> out;
  for (const ProcessEntry& p : processes) {
    if (catchers.count(p.pid) != 0 && catchers.count(p.ppid) == 0) out.push_back(p.pid);
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::optional<ProcessEntry> ParseProcStat(std::string_view stat) {
  // "<pid> (<comm>) <state> <ppid> <pgrp> ...": comm is the program's own name, which may hold
  // anything but a NUL, so the fields start after the last ')'.
  const size_t open = stat.find(" (");
  const size_t close = stat.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return std::nullopt;
  }
  ProcessEntry entry;
  if (!ParseNumber(stat.substr(0, open), &entry.pid)) return std::nullopt;
  std::istringstream rest{std::string(stat.substr(close + 1))};
  std::string state, ppid, pgrp;
  if (!(rest >> state >> ppid >> pgrp) || !ParseNumber(std::string_view(ppid), &entry.ppid) ||
      !ParseNumber(std::string_view(pgrp), &entry.pgrp)) {
    return std::nullopt;
  }
  return entry;
}

bool StatusCatches(std::string_view status, int signo) {
  if (signo < 1 || signo > 64) return false;
  constexpr std::string_view kField = "\nSigCgt:";
  const size_t at = status.find(kField);
  if (at == std::string_view::npos) return false;
  std::string_view rest = status.substr(at + kField.size());
  rest.remove_prefix(std::min(rest.find_first_not_of(" \t"), rest.size()));
  std::string_view hex = rest.substr(0, rest.find('\n'));
  uint64_t mask = 0;
  auto [end, ec] = std::from_chars(hex.data(), hex.data() + hex.size(), mask, 16);
  if (ec != std::errc() || end != hex.data() + hex.size() || hex.empty()) return false;
  return (mask >> (signo - 1) & 1) != 0;
}

int SignalStackDumpers(pid_t group) {
  int sent = 0;
  for (pid_t pid : OutermostCatchers(ProcessesOfGroup(group, kStackSignal), group)) {
    if (::kill(pid, kStackSignal) == 0) ++sent;
  }
  return sent;
}

std::string StackRequestLine(std::string_view noun, const std::vector<int>& ids,
                             const std::string& why, bool job_goes_on) {
  std::string list;
  for (int id : ids) list += (list.empty() ? "" : ", ") + std::to_string(id);
  return "asking " + std::string(noun) + (ids.size() > 1 ? "s " : " ") + list +
         (ids.size() > 1 ? " for their" : " for its") + " Python stacks (" + why + ")" +
         (job_goes_on ? "; the job goes on" : "");
}

bool AskForStacks(RankHandle* handle, pid_t group) {
  if (handle == nullptr) return SignalStackDumpers(group) > 0;
  handle->Signal(kStackSignal);
  return true;
}

std::string NoStackDumperLine(std::string_view noun, int id, const std::string& host) {
  return std::string(noun) + " " + std::to_string(id) + " on " + host +
         ": no process of it prints stacks (hvd's Python module does, once imported)";
}

std::optional<std::vector<int>> ParseRankList(std::string_view text) {
  constexpr size_t kMaxRanks = 1 << 16;
  std::vector<int> ranks;
  while (true) {
    const size_t comma = text.find(',');
    int rank = -1;
    if (!ParseNumber(text.substr(0, comma), &rank) || rank < 0 || ranks.size() >= kMaxRanks) {
      return std::nullopt;
    }
    ranks.push_back(rank);
    if (comma == std::string_view::npos) return ranks;
    text.remove_prefix(comma + 1);
  }
}

void StackRequests::Push(const std::string& value) {
  std::optional<std::vector<int>> ranks = ParseRankList(value);
  if (ranks) queue_.Push(std::move(*ranks));
}

std::vector<int> StackRequests::TakeAll() {
  std::vector<int> out = queue_.TakeAll();
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace hvd::launcher
