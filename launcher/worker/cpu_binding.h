#ifndef HVD_LAUNCHER_WORKER_CPU_BINDING_H_
#define HVD_LAUNCHER_WORKER_CPU_BINDING_H_

#include <sched.h>

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/status.h"

// Where a local rank runs. By default (HVD_BIND_TO=none, as horovodrun) placement is left to
// the kernel. With HVD_BIND_TO=core (`hvdrun --bind-to core`) each of a host's N local ranks
// is bound, with every thread it starts, to an even share of the CPUs its launcher (hvdrun, or
// hvd-agent on another host) may use: local rank r gets CPUs [r*C/N, (r+1)*C/N) of those C
// CPUs, as mpirun --bind-to core does.
//
// The trade-off, measured on a 2-vCPU VM (docs/known-gaps.md "Rank placement"): a rank's
// framework thread and its runtime thread hand every small op to each other; unbound, the
// scheduler often spreads them over two CPUs and each hand-off wakes a halted vCPU, so a 4 KiB
// allreduce takes ~90 us instead of ~10 us bound. But a training step that overlaps compute
// and communication runs ~15 % faster unbound (the kernel balances both ranks' compute and
// reduction threads over all CPUs), hence the default. On a 16-core machine (2026-11-27) the
// allreduce was level either way and the convnet at 8 ranks trained 1.03-1.12x faster unbound:
// the default holds there too. Bind for latency-bound jobs.
//
// Never bound when there are more local ranks than CPUs, when the local rank/size are unknown,
// or when the launcher's CPU mask cannot be read.
namespace hvd::launcher {

// The variable naming the policy, read from a rank's environment.
extern const char kBindToVar[];

// The CPUs a launcher process may use (sched_getaffinity), ascending; empty on failure.
std::vector<int> AllowedCpus();

// Local rank `local_rank` of `local_size`'s share of `allowed`; empty = do not bind.
std::vector<int> CpuShare(const std::vector<int>& allowed, int local_rank, int local_size);

// The set to bind a rank started with environment `env` to (HVD_BIND_TO, HVD_LOCAL_RANK,
// HVD_LOCAL_SIZE; `machine_slot`, when given, in place of the last two: the rank's index among
// and the number of the ranks on this machine), from `allowed`; nullopt = do not bind. An
// HVD_BIND_TO other than core or none is InvalidArgument naming the variable and the value.
Result<std::optional<cpu_set_t>> RankCpuSet(
    const std::map<std::string, std::string>& env, const std::vector<int>& allowed,
    std::optional<std::pair<int, int>> machine_slot = std::nullopt);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_WORKER_CPU_BINDING_H_
