#ifndef HVD_RUNTIME_TRANSPORTS_SHM_SHM_PROVIDER_H_
#define HVD_RUNTIME_TRANSPORTS_SHM_SHM_PROVIDER_H_

#include <memory>
#include <string>
#include <vector>

#include "common/kv_client.h"
#include "runtime/runtime_config.h"
#include "runtime/transports/backend_registry.h"

namespace hvd::runtime {

// The host each member of a group runs on, by the host identity hvdrun assigned
// (HVD_HOSTNAME), never the kernel's hostname: hosts simulated as network namespaces on one
// kernel count as different hosts. When this rank's local size equals the job size every
// member is on this host and nothing is exchanged; otherwise the members exchange identities
// under "<scope>/hostid/" (every member gets the same list). Blocks up to `timeout`. With
// `machines`, each member's MachineId() (host_layout.h) comes with it: several "hosts" may be
// one machine (network namespaces, containers), whose CPUs their ranks share; without an
// exchange every entry is this machine's.
Result<std::vector<std::string>> ExchangeHosts(control::KvClient* kv, const RuntimeConfig& config,
                                               const GroupSpec& spec,
                                               std::vector<std::string>* machines = nullptr);

// ShmProvider makes shared-memory communicators (shm_communicator.h) for groups on one host.
// A group that spans hosts goes to `fallback` (HVD_CPU_OPERATIONS=auto: hvd's TCP transport),
// or, when it is spread evenly over hosts in rank order with 2+ members each and hierarchical
// allreduce is auto or on (RuntimeConfig), to a hierarchical communicator: shared memory
// within each host, `fallback` across hosts (hierarchical_communicator.h). An uneven group is
// kInvalidArgument under HVD_HIERARCHICAL_ALLREDUCE=1 / HVD_HIERARCHICAL_ALLGATHER=1. Without
// a fallback (HVD_CPU_OPERATIONS=shm) a group that spans hosts is kInvalidArgument naming the
// hosts. Single-member groups get a SingleRankCommunicator. Same threading as any provider;
// every member of a group reaches the same decision (it depends only on the exchanged hosts).
class ShmProvider : public CommunicatorProvider {
 public:
  ShmProvider(std::unique_ptr<control::KvClient> kv, const RuntimeConfig& config,
              std::unique_ptr<CommunicatorProvider> fallback);

  Result<std::unique_ptr<Communicator>> Create(const GroupSpec& group) override;
  uint32_t enabled_flags() const override;
  control::KvClient* kv() override { return kv_.get(); }

 private:
  Result<std::unique_ptr<Communicator>> CreateShm(const GroupSpec& spec);
  Result<std::unique_ptr<Communicator>> CreateSpanning(const GroupSpec& spec,
                                                       const std::vector<std::string>& hosts);

  std::unique_ptr<control::KvClient> kv_;
  RuntimeConfig config_;
  std::unique_ptr<CommunicatorProvider> fallback_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SHM_SHM_PROVIDER_H_
