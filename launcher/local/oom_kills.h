#ifndef HVD_LAUNCHER_LOCAL_OOM_KILLS_H_
#define HVD_LAUNCHER_LOCAL_OOM_KILLS_H_

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

// Whether the kernel's OOM killer ended a rank. A rank killed for memory shows up as "SIGKILL
// (signal 9)", or as exit code 137 behind a shell, which does not say why (torchrun reports
// "exitcode: -9" alike). Where the rank ran — hvdrun for its own ranks, hvd-agent for the ranks
// it started — the failure is explained from two things the kernel keeps:
// - /proc/vmstat's oom_kill, the host's count of OOM kills (Linux 4.13+; memory-cgroup kills
//   included), read when the job starts and again when a rank dies: did the OOM killer act
//   while the job ran?
// - the kernel log (/dev/kmsg, readable by root or where kernel.dmesg_restrict is 0), whose
//   "Killed process <pid> (<name>) ... anon-rss:<n>kB" record names the victim: was it this
//   rank? Only the records of the kills counted since the job started are read, so an old
//   record of a reused pid is not taken for this one.
// Used from one thread at a time; each call reads the files anew.
namespace hvd::launcher {

// The host's count of OOM kills so far; nullopt where /proc/vmstat has none (an old kernel, no
// /proc).
std::optional<uint64_t> OomKillCount();

// One OOM kill as the kernel logged it.
struct OomKillRecord {
  pid_t pid = 0;
  std::string name;        // the task's command name, as the kernel gives it
  std::string constraint;  // "Out of memory", "Memory cgroup out of memory", or "" (old kernels)
  std::optional<uint64_t> anon_rss_kb;
};

// The OOM kill a kernel-log message reports ("... Killed process 1234 (python3) total-vm:...,
// anon-rss:65152kB, ..."), or nullopt for any other message. Pure.
std::optional<OomKillRecord> ParseOomKillMessage(std::string_view message);

// The messages of /dev/kmsg's records, oldest first; nullopt when the log cannot be read (no
// permission: kernel.dmesg_restrict).
std::optional<std::vector<std::string>> ReadKernelLog();

// Why a rank that ended with `wait_status` (SIGKILL, or exit code 137 as a shell reports a
// child killed by SIGKILL) died, when the OOM killer acted on this host since `count_at_start`
// (OomKillCount() when the job started):
// - "killed by the kernel's OOM killer (Memory cgroup out of memory; python3, anon-rss 65152
//   kB)" when one of those kills names `pid` (the log is read again once, 100 ms later, when
//   none does: the kernel logs a kill just after it sends the SIGKILL);
// - "the kernel's OOM killer killed 2 processes on this host during the job (dmesg names
//   them)" when it cannot tell whose: the log cannot be read, or the rank is a shell that
//   reports its child's SIGKILL as exit code 137, or its pid is unknown (-1);
// nullopt otherwise: another status, no count, no kill since the start, or the log names
// other pids only (a pid namespace hvdrun does not share with the kernel's log would look so
// too: then nothing is said rather than something wrong).
std::optional<std::string> ExplainKill(pid_t pid, int wait_status,
                                       std::optional<uint64_t> count_at_start);

// ExplainKill's decision over what was read (pure, for tests): `kills_since_start` OOM kills
// happened since the start, `log` is the kernel log's messages (nullopt: unreadable).
std::optional<std::string> ExplainKillFrom(pid_t pid, int wait_status, uint64_t kills_since_start,
                                           const std::optional<std::vector<std::string>>& log);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_LOCAL_OOM_KILLS_H_
