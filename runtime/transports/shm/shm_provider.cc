#include "runtime/transports/shm/shm_provider.h"

#include <algorithm>
#include <vector>

#include "common/logging.h"
#include "runtime/include/hvd/c_api.h"
#include "runtime/transports/hierarchical_communicator.h"
#include "runtime/transports/host_layout.h"
#include "runtime/transports/shm/shm_communicator.h"
#include "runtime/transports/single_rank_communicator.h"

namespace hvd::runtime {

Result<std::vector<std::string>> ExchangeHosts(control::KvClient* kv, const RuntimeConfig& config,
                                               const GroupSpec& spec,
                                               std::vector<std::string>* machines) {
  std::vector<std::string> hosts(spec.ranks.size(), config.hostname);
  const std::string machine = MachineId();
  if (machines != nullptr) machines->assign(spec.ranks.size(), machine);
  if (config.local_size == config.size) return hosts;
  const std::string prefix = spec.scope + "/hostid/";
  // "<host>\n<machine>": a host identity has no newline (hvdrun's host names).
  HVD_RETURN_IF_ERROR(
      kv->Set(prefix + std::to_string(spec.rank_in_group), config.hostname + "\n" + machine));
  for (size_t i = 0; i < spec.ranks.size(); ++i) {
    auto host = kv->Wait(prefix + std::to_string(i), config.timeout);
    if (!host.ok()) {
      return host.status().WithContext("rank " + std::to_string(config.rank) +
                                       ": exchanging host identities for group '" + spec.scope +
                                       "'");
    }
    const size_t cut = host->rfind('\n');
    hosts[i] = host->substr(0, cut);
    if (machines != nullptr) (*machines)[i] = cut == std::string::npos ? "" : host->substr(cut + 1);
  }
  Status finished = kv->FinishScope(prefix, static_cast<int>(spec.ranks.size()));
  if (!finished.ok()) HVD_LOG_DEBUG("host identity cleanup: {}", finished.ToString());
  return hosts;
}

ShmProvider::ShmProvider(std::unique_ptr<control::KvClient> kv, const RuntimeConfig& config,
                         std::unique_ptr<CommunicatorProvider> fallback)
    : kv_(std::move(kv)), config_(config), fallback_(std::move(fallback)) {}

Result<std::unique_ptr<Communicator>> ShmProvider::Create(const GroupSpec& group) {
  if (group.ranks.size() == 1) return std::unique_ptr<Communicator>(new SingleRankCommunicator());
  std::vector<std::string> machines;
  HVD_ASSIGN_OR_RETURN(std::vector<std::string> hosts,
                       ExchangeHosts(kv_.get(), config_, group, &machines));
  GroupSpec spec = group;
  spec.ranks_on_machine = CountSameMachine(machines, spec.rank_in_group);
  const bool one_host = std::all_of(hosts.begin(), hosts.end(),
                                    [&](const std::string& h) { return h == hosts.front(); });
  if (one_host) return CreateShm(spec);
  if (!fallback_) {
    return Status::InvalidArgument(
        "HVD_CPU_OPERATIONS=shm: the group '" + spec.scope + "' has members on other hosts than " +
        config_.hostname +
        "; shared memory needs one host (use HVD_CPU_OPERATIONS=auto to fall back to TCP)");
  }
  return CreateSpanning(spec, hosts);
}

Result<std::unique_ptr<Communicator>> ShmProvider::CreateShm(const GroupSpec& spec) {
  ShmOptions options;
  options.kv = kv_.get();
  options.scope = spec.scope;
  options.job_id = config_.job_id;
  options.rank = spec.rank_in_group;
  options.size = static_cast<int>(spec.ranks.size());
  options.buffer_bytes = static_cast<size_t>(config_.shm_buffer_bytes);
  // With more ranks than CPUs the allreduce's direct reads lose: 4 ranks on 2 vCPUs, 64 MiB 37
  // ms staged against 47 ms (each read walks the peer's page tables while the peer wants the
  // CPU). The alltoall's win there (one read per piece against two copies through the halves):
  // 16 ranks on 2 vCPUs, 64 MiB 95-108 against 147-167 ms, 16 MiB 29-32 against 32-43 ms
  // (2026-11-25, three interleaved runs; Open MPI's vader 77-83 and 19-21 ms).
  options.ranks_on_machine = RanksOnMachine(config_, spec);
  options.single_copy_bytes = config_.shm_single_copy_bytes;
  options.single_copy_allreduce = CpuPerRank(options.ranks_on_machine);
  options.choose_single_copy = config_.shm_single_copy == "auto";
  options.direct_bytes = config_.shm_direct_bytes;
  options.timeout = config_.timeout;
  options.named = config_.shm_named;
  return CreateShmCommunicator(options);
}

// A group on several hosts: hierarchical when it applies, else `fallback_` over the whole
// group. Creation order (flat, local, cross) is the same on every member.
Result<std::unique_ptr<Communicator>> ShmProvider::CreateSpanning(
    const GroupSpec& spec, const std::vector<std::string>& hosts) {
  const HostLayout layout = ComputeHostLayout(hosts, spec.rank_in_group);
  HierarchicalOps ops;
  ops.allreduce = config_.hierarchical_allreduce != "off";
  ops.allgather = config_.hierarchical_allgather;
  const bool forced = config_.hierarchical_allreduce == "on" || ops.allgather;
  if (!layout.uniform && forced) {
    return Status::InvalidArgument(
        "hierarchical collectives (HVD_HIERARCHICAL_ALLREDUCE/ALLGATHER=1) need the group '" +
        spec.scope +
        "' spread evenly over its hosts in rank order (ranks 0..L-1 on the first host, L..2L-1 "
        "on the next, ...), but it runs as: " +
        layout.summary);
  }
  if (!layout.uniform || layout.local_size < 2 || !(ops.allreduce || ops.allgather)) {
    return fallback_->Create(spec);
  }
  HVD_ASSIGN_OR_RETURN(auto flat, fallback_->Create(spec));
  GroupSpec local;
  local.scope = spec.scope + "/local" + std::to_string(layout.host_index);
  local.rank_in_group = layout.local_rank;
  local.ranks_on_machine = spec.ranks_on_machine;
  for (int32_t i : layout.local_members) local.ranks.push_back(spec.ranks[i]);
  HVD_ASSIGN_OR_RETURN(auto local_comm, CreateShm(local));
  GroupSpec cross;
  cross.scope = spec.scope + "/cross" + std::to_string(layout.local_rank);
  cross.rank_in_group = layout.host_index;
  cross.ranks_on_machine = spec.ranks_on_machine;
  for (int32_t i : layout.cross_members) cross.ranks.push_back(spec.ranks[i]);
  HVD_ASSIGN_OR_RETURN(auto cross_comm, fallback_->Create(cross));
  HVD_LOG_DEBUG("group '{}': hierarchical ({}), {} hosts x {} ranks", spec.scope,
                ops.allgather ? "allreduce, allgather" : "allreduce", layout.hosts,
                layout.local_size);
  return MakeHierarchicalCommunicator(std::move(flat), std::move(local_comm), std::move(cross_comm),
                                      ops);
}

// The controller's (the fallback's): HVD_BUILT_GLOO under hvdrun's rendezvous (tcp, gloo),
// HVD_BUILT_MPI under mpirun, as Horovod's gloo_enabled()/mpi_enabled() answer there.
uint32_t ShmProvider::enabled_flags() const {
  return fallback_ ? fallback_->enabled_flags() : HVD_BUILT_GLOO;
}

}  // namespace hvd::runtime
