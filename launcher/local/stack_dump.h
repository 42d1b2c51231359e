#ifndef HVD_LAUNCHER_LOCAL_STACK_DUMP_H_
#define HVD_LAUNCHER_LOCAL_STACK_DUMP_H_

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "launcher/local/event_queue.h"
#include "launcher/local/rank_spawner.h"
#include "launcher/worker/worker_env.h"  // kStackSignal

// Asking a running rank where it is: hvdrun (on SIGQUIT, or when the stall inspector names a
// rank that never submitted its tensor) sends kStackSignal to the rank, whose hvd Python module
// registered faulthandler for it (HVD_STACK_SIGNAL in its environment): every Python thread's
// stack goes to the rank's stderr and the rank runs on. Nothing is sent to a process that does
// not catch the signal, whose default action would end it.
namespace hvd::launcher {

// One process as /proc shows it.
struct ProcessEntry {
  pid_t pid = -1;
  pid_t ppid = -1;
  pid_t pgrp = -1;
  bool catches = false;  // its handler for the signal asked about is installed (SigCgt)
};

// How long ranks get to print their stacks before hvdrun stops them for --timeout: the dump
// is written from the signal handler as soon as the process runs.
inline constexpr std::chrono::seconds kStackDumpWait{2};

// The processes of group `group` that catch the signal and whose parent does not: the rank's
// Python and not, say, its DataLoader workers (forks inherit the handler), whose dumps would
// interleave with it on one pipe; a shell that runs the Python without exec catches nothing and
// its child is chosen. Ascending pids.
std::vector<pid_t> OutermostCatchers(const std::vector<ProcessEntry>& processes, pid_t group);

// Parses /proc/<pid>/stat: pid, ppid, pgrp (the name between the parentheses may hold spaces
// and ')'); nullopt when malformed. `catches` is left false.
std::optional<ProcessEntry> ParseProcStat(std::string_view stat);
// Whether /proc/<pid>/status's SigCgt mask has `signo`; false when the line is missing or bad.
bool StatusCatches(std::string_view status, int signo);

// Sends kStackSignal to OutermostCatchers of group `group` on this host (from /proc); returns
// how many processes it went to (0: no process of the rank registered the dump).
int SignalStackDumpers(pid_t group);

// hvdrun's line when it asks `ids` (ranks, or an elastic job's workers: `noun`) for their
// stacks: "asking ranks 0, 1 for their Python stacks (<why>); the job goes on".
std::string StackRequestLine(std::string_view noun, const std::vector<int>& ids,
                             const std::string& why, bool job_goes_on);
// Asks one rank for its stacks: a remote one through its hvd-agent (`handle`), which picks the
// processes alike; a local one's dumpers in process group `group`. False when a local rank has
// none, whose line is then NoStackDumperLine.
bool AskForStacks(RankHandle* handle, pid_t group);
std::string NoStackDumperLine(std::string_view noun, int id, const std::string& host);

// Stack requests from the runtime (the stall inspector on rank 0 sets control::kStackRequestKey
// to the ranks it found missing), handed from the rendezvous server's I/O thread to the job's
// event loop: Push on any thread, event_fd() readable until TakeAll. Thread-safe.
class StackRequests {
 public:
  int event_fd() const { return queue_.event_fd(); }
  // `value`: ranks in decimal separated by commas ("1,3"); anything else is dropped.
  void Push(const std::string& value);
  // Every rank asked for since the last call, ascending, without repeats.
  std::vector<int> TakeAll();

 private:
  EventQueue<int> queue_;
};

// "1,3" -> {1, 3}; nullopt unless every item is a rank (0 to 2^31-1) and there is one.
std::optional<std::vector<int>> ParseRankList(std::string_view text);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_STACK_DUMP_H_
