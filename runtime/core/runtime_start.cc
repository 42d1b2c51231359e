// Runtime's start-up checks and settings beside runtime.cc: what every rank must agree on
// before the first cycle (CheckSameEverywhere), and where the background thread runs.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <pthread.h>
#include <sched.h>

#include <cstring>

#include "common/logging.h"
#include "runtime/core/negotiation/start_agreement.h"
#include "runtime/core/runtime.h"

namespace hvd::runtime {

// Horovod's homogeneity test (every host runs the same number of ranks), and the knobs every
// member's negotiation must share: each rank plans the fast path's fusion, sizes the cache's
// bit vectors and decides when the eager allreduce rides the AND round itself, so a rank with
// another value sends rounds of another length (a malformed list or a reset connection, with
// nothing naming the cause). Rank 0 names the first knob that differs and every rank fails
// init with that message. So with the process sets given to init: a rank that defined others
// would build its sets' communicators with other members, and a collective on such a set
// reduced with ranks the caller did not list (ranks 1 and 2 defining [0, 2] and rank 0 [0, 1]:
// rank 0's allreduce over "[0, 1]" returned rank 0's and rank 2's sum, without an error).
Status Runtime::CheckSameEverywhere(Communicator* comm,
                                    const std::vector<std::vector<int32_t>>& process_sets) {
  // Also what decides how an op runs where every member must run it alike: fusing grouped ops
  // (each rank plans the fast path's fusion), the autotuner's round per cycle, the hierarchy,
  // and the GPU path's per-op choices and completion (one rank staging an allgather or running
  // the drain's barrier while another calls NCCL is a hang until the timeout).
  const int64_t hierarchical = config_.hierarchical_allreduce == "on"    ? 1
                               : config_.hierarchical_allreduce == "off" ? 2
                                                                         : 0;
  const StartKnob knobs[] = {
      {"HVD_FUSION_THRESHOLD", config_.fusion_threshold_bytes},
      {"HVD_CACHE_CAPACITY", config_.cache_capacity},
      {"HVD_EAGER_ALLREDUCE_BYTES", config_.eager_allreduce_bytes},
      {"HVD_TCP_HALVING_BYTES", config_.tcp_halving_bytes},
      {"HVD_SHM_DIRECT_BYTES", config_.shm_direct_bytes},
      {"HVD_DISABLE_GROUP_FUSION", config_.disable_group_fusion},
      {"HVD_AUTOTUNE", config_.autotune.enabled},
      {"HVD_HIERARCHICAL_ALLREDUCE (0 auto, 1 on, 2 off)", hierarchical},
      {"HVD_HIERARCHICAL_ALLGATHER", config_.hierarchical_allgather},
      {"HVD_GPU_ALLGATHER (1: staged)", config_.gpu_staged.allgather},
      {"HVD_GPU_BROADCAST (1: staged)", config_.gpu_staged.broadcast},
      {"HVD_GPU_ALLTOALL (1: staged)", config_.gpu_staged.alltoall},
      {"HVD_GPU_REDUCESCATTER (1: staged)", config_.gpu_staged.reducescatter},
      {"HVD_GPU_ASYNC_COMPLETION", config_.gpu_async_completion},
      // A rank without it refuses add_process_set while the others wait.
      {"HVD_DYNAMIC_PROCESS_SETS", config_.dynamic_process_sets}};
  // Each set as given (Python sorts them; the C API checks them after this), in order: the
  // order numbers the sets.
  const std::string sets = fmt::format("{}", process_sets);  // "[[0, 1], [0, 2]]"
  std::vector<std::string> all;
  HVD_RETURN_IF_ERROR(comm->GatherBytes(EncodeStartLine(config_.local_size, knobs, sets), 0, &all));
  std::string verdict;
  if (comm->rank() == 0) verdict = JudgeStartLines(all, config_.local_size, knobs, sets);
  HVD_RETURN_IF_ERROR(comm->BroadcastBytes(&verdict, 0));
  if (verdict.size() > 1) return Status::InvalidArgument(verdict);
  topology_.homogeneous = verdict == "1";
  return Status::OK();
}

// HVD_THREAD_AFFINITY (hvdrun --thread-affinity), as Horovod: the background thread of local
// rank i runs on the i-th core listed. Accepted but not applied until 2026-12-01.
void Runtime::PinBackgroundThread() {
  if (config_.thread_affinity.empty()) return;
  if (static_cast<int>(config_.thread_affinity.size()) <= config_.local_rank) {
    HVD_LOG_WARNING(
        "HVD_THREAD_AFFINITY lists {} core(s) for local rank {} of {}: the background "
        "thread is not pinned",
        config_.thread_affinity.size(), config_.local_rank, config_.local_size);
    return;
  }
  const int core = config_.thread_affinity[static_cast<size_t>(config_.local_rank)];
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(core, &set);
  const int rc = ::pthread_setaffinity_np(thread_.native_handle(), sizeof(set), &set);
  if (rc != 0) {
    HVD_LOG_WARNING("HVD_THREAD_AFFINITY: cannot pin the background thread to core {}: {}", core,
                    std::strerror(rc));
    return;
  }
  HVD_LOG_DEBUG("background thread pinned to core {} (HVD_THREAD_AFFINITY)", core);
}

}  // namespace hvd::runtime
