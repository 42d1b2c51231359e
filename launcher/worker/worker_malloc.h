#ifndef HVD_LAUNCHER_WORKER_WORKER_MALLOC_H_
#define HVD_LAUNCHER_WORKER_WORKER_MALLOC_H_

#include <map>
#include <string>

#include "common/status.h"

// The settings of glibc's allocator that hvdrun gives its workers (HVD_WORKER_MALLOC,
// `hvdrun --worker-malloc`). Pure functions; thread-safe.
//
// A training step allocates and frees the same large temporaries every step (a convolution's
// unfolded input, activations, their gradients: megabytes each). glibc serves a block of
// 128 KiB or more with its own mmap, and returns freed memory at the top of its heap beyond a
// threshold that it adapts as it goes: in steady state a step's temporaries are handed back to
// the kernel and faulted in again, page by page, every step. On the 2-vCPU VM this project is
// measured on, the synthetic convnet (examples/torch_synthetic_benchmark.py, batch 32, one
// thread) took 150-236 thousand page faults in 55 steps and ran at 380-710 img/s in one process;
// with the two settings below, 40-43 thousand and 1190-1600 img/s (2026-11-26,
// docs/benchmarks-training.md). The mlp, whose temporaries are small, ran the same either way.
//
// `tuned` (the default) sets MALLOC_MMAP_THRESHOLD_ = 32 MiB (glibc's own ceiling for the
// threshold it adapts: blocks below it come from the heap, where a freed block is reused) and
// MALLOC_TRIM_THRESHOLD_ = 1 GiB (free memory at the top of a heap is kept up to that much, so
// the next step's temporaries find their pages already mapped). Setting either fixes both
// (glibc stops adapting), which is why both are set. The cost is memory kept: a worker's heap
// does not shrink below its peak (at most 1 GiB of it free at the top); blocks of 32 MiB and
// more are still mapped and unmapped per allocation. `system` leaves glibc's defaults.
// Either way nothing is set when the user configured the allocator already: any of
// MALLOC_MMAP_THRESHOLD_, MALLOC_TRIM_THRESHOLD_, MALLOC_TOP_PAD_, MALLOC_MMAP_MAX_ in hvdrun's
// environment, a `glibc.malloc.` tunable in GLIBC_TUNABLES, or another allocator (jemalloc,
// tcmalloc, mimalloc) in LD_PRELOAD. hvdrun decides once, from its own environment, and the
// variables travel with the knobs' (to other hosts, where they override the login
// environment's, and through mpirun's -x). Other C libraries ignore them.
namespace hvd::launcher {

// The variable naming the policy, read from hvdrun's environment when the flag and the config
// file leave it open.
extern const char kWorkerMallocVar[];

// The variables to add to every worker's environment under `policy` ("tuned" or "system"),
// given hvdrun's own environment `env`; empty when none. Another policy is InvalidArgument
// naming `source` (the flag, config key or variable it came from) and the value.
Result<std::map<std::string, std::string>> WorkerMallocVars(
    const std::string& policy, const std::string& source,
    const std::map<std::string, std::string>& env);

// Why WorkerMallocVars adds nothing under "tuned" with `env` ("MALLOC_TRIM_THRESHOLD_ is set",
// "LD_PRELOAD loads jemalloc"); empty when it adds its variables. hvdrun --print-config shows it.
std::string UserAllocatorSetting(const std::map<std::string, std::string>& env);

}  // namespace hvd::launcher

#endif  // HVD_LAUNCHER_WORKER_WORKER_MALLOC_H_
