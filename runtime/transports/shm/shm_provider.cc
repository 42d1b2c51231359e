#include "runtime/transports/shm/shm_provider.h"

#include <vector>

#include "common/logging.h"
#include "runtime/transports/shm/shm_communicator.h"
#include "runtime/transports/single_rank_communicator.h"

namespace hvd::runtime {

Result<bool> GroupOnOneHost(control::KvClient* kv, const RuntimeConfig& config,
                            const GroupSpec& spec) {
  if (config.local_size == config.size) return true;
  const std::string prefix = spec.scope + "/hostid/";
  HVD_RETURN_IF_ERROR(kv->Set(prefix + std::to_string(spec.rank_in_group), config.hostname));
  bool same = true;
  std::string hosts;
  for (size_t i = 0; i < spec.ranks.size(); ++i) {
    auto host = kv->Wait(prefix + std::to_string(i), config.timeout);
    if (!host.ok()) {
      return host.status().WithContext("rank " + std::to_string(config.rank) +
                                       ": exchanging host identities for group '" + spec.scope +
                                       "'");
    }
    if (*host != config.hostname) same = false;
    hosts += (i == 0 ? "" : ", ") + *host;
  }
  Status finished = kv->FinishScope(prefix, static_cast<int>(spec.ranks.size()));
  if (!finished.ok()) HVD_LOG_DEBUG("host identity cleanup: {}", finished.ToString());
  if (!same) HVD_LOG_DEBUG("group '{}' spans hosts {}", spec.scope, hosts);
  return same;
}

ShmProvider::ShmProvider(std::unique_ptr<control::KvClient> kv, const RuntimeConfig& config,
                         std::unique_ptr<CommunicatorProvider> fallback)
    : kv_(std::move(kv)), config_(config), fallback_(std::move(fallback)) {}

Result<std::unique_ptr<Communicator>> ShmProvider::Create(const GroupSpec& spec) {
  if (spec.ranks.size() == 1) return std::unique_ptr<Communicator>(new SingleRankCommunicator());
  HVD_ASSIGN_OR_RETURN(bool local, GroupOnOneHost(kv_.get(), config_, spec));
  if (!local) {
    if (fallback_) return fallback_->Create(spec);
    return Status::InvalidArgument(
        "HVD_CPU_OPERATIONS=shm: the group '" + spec.scope + "' has members on other hosts than " +
        config_.hostname +
        "; shared memory needs one host (use HVD_CPU_OPERATIONS=auto to fall back to Gloo)");
  }
  ShmOptions options;
  options.kv = kv_.get();
  options.scope = spec.scope;
  options.job_id = config_.job_id;
  options.rank = spec.rank_in_group;
  options.size = static_cast<int>(spec.ranks.size());
  options.buffer_bytes = static_cast<size_t>(config_.shm_buffer_bytes);
  options.timeout = config_.timeout;
  return CreateShmCommunicator(options);
}

uint32_t ShmProvider::enabled_flags() const { return fallback_ ? fallback_->enabled_flags() : 0; }

}  // namespace hvd::runtime
