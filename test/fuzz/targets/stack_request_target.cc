// Target "stack_request": what hvdrun reads to ask ranks for their stacks
// (launcher/local/stack_dump.h): the "stacks" key's value, which any member of the job may set
// (ParseRankList, StackRequests), and /proc/<pid>/stat and status (a program calls itself
// anything, parentheses and newlines included: ParseProcStat, StatusCatches). Input: a
// selector byte, then the text; for status, a signal number byte first. Found on its first run
// (2026-11-28): a stat line's pid "040" read as 40 (the kernel writes no leading zero, nor does
// hvd's runtime in a rank list: both are refused now).
#include <algorithm>
#include <string>
#include <vector>

#include "common/check.h"
#include "launcher/local/stack_dump.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzStackRequest(std::string_view input) {
  FuzzInput in(input);
  const uint8_t what = in.Byte() % 3;
  if (what == 0) {
    const std::string text(in.Rest());
    std::optional<std::vector<int>> ranks = launcher::ParseRankList(text);
    launcher::StackRequests requests;
    requests.Push(text);
    std::vector<int> taken = requests.TakeAll();
    if (!ranks) {
      HVD_CHECK(taken.empty());
      return "not a rank list\n";
    }
    // Every rank reads back as it was written: decimal, no sign, no leading zero...
    std::string again;
    for (int rank : *ranks) again += (again.empty() ? "" : ",") + std::to_string(rank);
    HVD_CHECK(again == text);
    // ...and the queue hands each out once, ascending.
    std::vector<int> sorted = *ranks;
    std::sort(sorted.begin(), sorted.end());
    sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
    HVD_CHECK(taken == sorted);
    return "";
  }
  if (what == 1) {
    const std::string_view stat = in.Rest();
    std::optional<launcher::ProcessEntry> entry = launcher::ParseProcStat(stat);
    if (!entry) return "not a stat line\n";
    // The pid leads the line; ppid and pgrp come after the name's last ')'.
    HVD_CHECK(stat.rfind(std::to_string(entry->pid) + " (", 0) == 0);
    HVD_CHECK(!entry->catches);
    std::vector<launcher::ProcessEntry> table = {*entry};
    table[0].catches = true;
    std::vector<pid_t> chosen = launcher::OutermostCatchers(table, entry->pgrp);
    HVD_CHECK(chosen.size() == (entry->ppid == entry->pid ? 0u : 1u));
    return "";
  }
  const int signo = in.Byte() % 70;
  const bool caught = launcher::StatusCatches(in.Rest(), signo);
  HVD_CHECK(!caught || (signo >= 1 && signo <= 64));
  return "";
}

}  // namespace hvd::fuzz
