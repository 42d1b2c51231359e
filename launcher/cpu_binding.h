#ifndef HVD_LAUNCHER_CPU_BINDING_H_
#define HVD_LAUNCHER_CPU_BINDING_H_

#include <sched.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/status.h"

// Where a local rank runs. With HVD_BIND_TO=core (the default; `hvdrun --bind-to core`) each
// of a host's N local ranks is bound, with every thread it starts, to an even share of the
// CPUs its launcher (hvdrun, or hvd-agent on another host) may use: local rank r gets CPUs
// [r*C/N, (r+1)*C/N) of those C CPUs. Open MPI's mpirun does the same by default for two ranks.
//
// Why: a rank's framework thread and its runtime thread hand every small op to each other,
// and the ranks' runtime threads meet in shared memory. When the scheduler spreads one rank's
// two threads over two CPUs, each hand-off wakes a halted (virtual) CPU: ~100 us per 4 KiB
// allreduce instead of ~13 us, and the placement tends to stay (docs/runtime.md). Bound, a
// rank's threads share its CPUs and the ranks' runtime threads meet across CPUs.
//
// No binding (placement left to the kernel) with HVD_BIND_TO=none, when there are more local
// ranks than CPUs (sharing is then unavoidable and pinning would only add imbalance), when
// the local rank/size are unknown, or when the launcher's CPU mask cannot be read.
namespace hvd::launcher {

// The variable naming the policy, read from a rank's environment.
extern const char kBindToVar[];

// The CPUs a launcher process may use (sched_getaffinity), ascending; empty on failure.
std::vector<int> AllowedCpus();

// Local rank `local_rank` of `local_size`'s share of `allowed`; empty = do not bind.
std::vector<int> CpuShare(const std::vector<int>& allowed, int local_rank, int local_size);

// The set to bind a rank started with environment `env` to (HVD_BIND_TO, HVD_LOCAL_RANK,
// HVD_LOCAL_SIZE), from `allowed`; nullopt = do not bind. An HVD_BIND_TO other than core or
// none is InvalidArgument naming the variable and the value.
Result<std::optional<cpu_set_t>> RankCpuSet(const std::map<std::string, std::string>& env,
                                            const std::vector<int>& allowed);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_CPU_BINDING_H_
