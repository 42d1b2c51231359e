#ifndef HVD_RUNTIME_TRANSPORTS_BACKEND_REGISTRY_H_
#define HVD_RUNTIME_TRANSPORTS_BACKEND_REGISTRY_H_

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/runtime_config.h"
#include "runtime/transports/communicator.h"
#include "runtime/transports/gpu_backend.h"

namespace hvd::control {
class KvClient;
}  // namespace hvd::control

namespace hvd::runtime {

// Which group a communicator spans. `scope` namespaces its rendezvous keys
// ("<round>/global", "<round>/ps/<id>"); `ranks` are the members' global ranks in group
// order; `rank_in_group` is this process's position among them.
struct GroupSpec {
  std::string scope;
  std::vector<int32_t> ranks;
  int32_t rank_in_group = 0;
  // Ranks of the group running on this member's machine (one kernel: network-namespace or
  // container "hosts" of one machine share its CPUs), when the provider found out
  // (ShmProvider, from the members' boot ids); 0 = not known: the launcher's local size.
  int32_t ranks_on_machine = 0;
};

// The ranks sharing this machine's CPUs as far as `spec`'s member knows (for CpuPerRank,
// host_layout.h): the launcher's local size, or more when the provider found several of the
// group's "hosts" on this machine.
inline int RanksOnMachine(const RuntimeConfig& config, const GroupSpec& spec) {
  return std::max(config.local_size, spec.ranks_on_machine);
}

// Creates communicators for one initialized runtime (one per process set this rank belongs
// to). Used from the thread running Init and then the background thread, one call at a time;
// all members of a group call Create for it in the same order.
class CommunicatorProvider {
 public:
  virtual ~CommunicatorProvider() = default;
  virtual Result<std::unique_ptr<Communicator>> Create(const GroupSpec& spec) = 0;
  // HVD_BUILT_* bits of the backends in use.
  virtual uint32_t enabled_flags() const = 0;
  // This rank's cross rank/size when the transport knows them better than the environment
  // (under mpirun: Horovod's cross communicator over MPI); called once by every rank after
  // the provider is made. False keeps the configured values.
  virtual bool CrossTopology(int32_t* /*cross_rank*/, int32_t* /*cross_size*/) { return false; }
  // The connection to hvdrun's KV server, when the transport rendezvouses through it (null
  // under MPI and for a single rank); thread-safe. Runtime::ReportFailure writes to it.
  virtual control::KvClient* kv() { return nullptr; }
};

// Makes the provider for a configuration; called once per Init (a seam for tests, which
// inject an in-process fake).
using ProviderFactory =
    std::function<Result<std::unique_ptr<CommunicatorProvider>>(const RuntimeConfig&)>;

// The production factory: a single-rank provider when size == 1; with HVD_CONTROLLER=mpi (the
// default under mpirun) MPI communicators, carrying the data too unless HVD_CPU_OPERATIONS=gloo
// (Unimplemented when built without MPI); otherwise connects to hvdrun's KV server
// (HVD_RENDEZVOUS_ADDR/PORT, key from HVD_SECRET_FD) and creates Gloo (or tcp) communicators;
// HVD_CPU_OPERATIONS=shm / auto: shared memory for groups on one host (shm_provider.h).
Result<std::unique_ptr<CommunicatorProvider>> CreateDefaultProvider(const RuntimeConfig& config);

// HVD_BUILT_* bits of the backends compiled in.
uint32_t BuildFlags();
// NCCL_VERSION_CODE the GPU path was compiled against; 0 without it.
int32_t NcclVersionCode();

// The GPU path of a runtime (gpu_backend.h), or null in a build without CUDA and NCCL (GPU
// tensors are then refused at enqueue). Touches no device.
std::unique_ptr<GpuBackend> CreateGpuBackend();

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_BACKEND_REGISTRY_H_
