#ifndef HVD_LAUNCHER_WORKER_WORKER_THREADS_H_
#define HVD_LAUNCHER_WORKER_WORKER_THREADS_H_

#include <map>
#include <string>
#include <vector>

#include "common/status.h"

// The threads each worker's OpenMP (PyTorch's intra-op pool) starts with (HVD_WORKER_THREADS,
// `hvdrun --worker-threads`). Pure functions; thread-safe.
//
// PyTorch sizes its intra-op pool to the machine's cores, in every process: 8 ranks on a
// 16-core host run 8 pools of 16 threads, and OpenMP threads that outnumber the CPUs spin and
// wait for each other. On the 2-vCPU VM this project is measured on, 2 ranks of the synthetic
// convnet (examples/torch_synthetic_benchmark.py) trained at 730-740 img/s with 8 threads each
// against 3420-3510 with 1 each (2026-11-28, docs/cli.md "Workers' threads"). torchrun sets
// OMP_NUM_THREADS=1 for that reason; horovodrun sets nothing.
//
// `share` (the default) gives each rank OMP_NUM_THREADS = the physical cores the job may use on
// the rank's host (of the launching process's affinity there: hvdrun's own, or hvd-agent's on
// another host) divided by the ranks the job runs there, at least 1; `system` sets nothing.
// Cores, not hardware threads, because torch's own default for one process is the physical
// cores: one rank gets what torch would have chosen. Either way an OMP_NUM_THREADS of the user's
// (hvdrun's environment, or the remote login's) wins.
namespace hvd::launcher {

// The variable naming the policy: read from hvdrun's environment when the flag and the config
// file leave it open, and given to every worker, so that a remote host's agent applies it.
extern const char kWorkerThreadsVar[];

// OK for "share" and "system"; otherwise InvalidArgument naming `source` (the flag, config key
// or variable it came from) and the value.
Status CheckWorkerThreadsPolicy(const std::string& policy, const std::string& source);

// Under `share` (env's kWorkerThreadsVar), and unless env has OMP_NUM_THREADS: sets it to
// max(1, cores / ranks_here). Nothing when cores or ranks_here is not positive.
void ShareWorkerThreads(std::map<std::string, std::string>& env, int cores, int ranks_here);

// The physical cores among `cpus`: distinct (physical_package_id, core_id) of
// <sysfs>/cpuN/topology; a CPU whose topology cannot be read counts as a core of its own.
int PhysicalCores(const std::vector<int>& cpus,
                  const std::string& sysfs = "/sys/devices/system/cpu");

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_WORKER_WORKER_THREADS_H_
