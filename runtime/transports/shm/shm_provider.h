#ifndef HVD_RUNTIME_TRANSPORTS_SHM_SHM_PROVIDER_H_
#define HVD_RUNTIME_TRANSPORTS_SHM_SHM_PROVIDER_H_

#include <memory>
#include <string>

#include "common/kv_client.h"
#include "runtime/runtime_config.h"
#include "runtime/transports/backend_registry.h"

namespace hvd::runtime {

// Decides whether every member of a group runs on this host, by the host identity hvdrun
// assigned (HVD_HOSTNAME), never the kernel's hostname: hosts simulated as network namespaces
// on one kernel count as different hosts. When this rank's local size equals the job size the
// answer is yes without communication; otherwise the members exchange identities under
// "<scope>/hostid/" (every member computes the same answer). Blocks up to `timeout`.
Result<bool> GroupOnOneHost(control::KvClient* kv, const RuntimeConfig& config,
                            const GroupSpec& spec);

// ShmProvider makes shared-memory communicators (shm_communicator.h) for groups on one host
// and hands every other group to `fallback` (HVD_CPU_OPERATIONS=auto: Gloo); without a
// fallback (HVD_CPU_OPERATIONS=shm) such a group is kInvalidArgument naming the hosts.
// Single-member groups get a SingleRankCommunicator. Same threading as any provider.
class ShmProvider : public CommunicatorProvider {
 public:
  ShmProvider(std::unique_ptr<control::KvClient> kv, const RuntimeConfig& config,
              std::unique_ptr<CommunicatorProvider> fallback);

  Result<std::unique_ptr<Communicator>> Create(const GroupSpec& spec) override;
  uint32_t enabled_flags() const override;

 private:
  std::unique_ptr<control::KvClient> kv_;
  RuntimeConfig config_;
  std::unique_ptr<CommunicatorProvider> fallback_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SHM_SHM_PROVIDER_H_
