#ifndef HVD_RUNTIME_TRANSPORTS_GPU_PATH_H_
#define HVD_RUNTIME_TRANSPORTS_GPU_PATH_H_

#include <string>
#include <vector>

#include "common/status.h"

namespace hvd::runtime {

// The bytes of NCCL's ncclUniqueId (NCCL_UNIQUE_ID_BYTES; nccl_group.cc checks it against nccl.h).
inline constexpr size_t kNcclUniqueIdBytes = 128;

// Which way a process set's GPU ops go, decided by its rank 0 from every member's
// "<HVD_GPU_OPERATIONS>\n<machine>\n<PCI bus id>[\nscale-kernel]" (in set-rank order; the
// machine is the NCCL_HOSTID the rank declares, else its host name; the last line where its
// device runs hvd's scaling kernel, HaveScaleKernel): "NK" NCCL (every member has a GPU of its
// own) with the kernel, "N-" NCCL with the pre-multiplied sum (a member's GPU has no machine
// code for the kernel), "S" staged through the host, or 'E' followed by an error message (the
// modes differ, an identity is malformed, or nccl was asked for with a shared GPU). Pure and
// free of CUDA, so a unit test and the fuzz target `rank_setup` check it without a GPU.
std::string DecideGpuPath(const std::vector<std::string>& identities);

// What a member reads from the decision rank 0 broadcasts: DecideGpuPath's answer, with the
// NCCL unique id's bytes after "NK" / "N-".
struct GpuDecision {
  bool nccl = false;          // false: staged through the host
  bool scale_kernel = false;  // NCCL: every member runs hvd's scaling kernel
  std::string unique_id;      // NCCL: kNcclUniqueIdBytes bytes
};

// Refuses anything but "S", "NK<id>", "N-<id>" (an 'E' decision is refused with its message).
Result<GpuDecision> ReadGpuDecision(const std::string& decision);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_GPU_PATH_H_
