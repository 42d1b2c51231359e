#include "runtime/transports/backend_registry.h"

#include "common/job_key.h"
#include "common/kv_client.h"
#include "runtime/include/hvd/c_api.h"
#include "runtime/transports/host_layout.h"
#include "runtime/transports/shm/shm_provider.h"
#include "runtime/transports/single_rank_communicator.h"
#include "runtime/transports/tcp/tcp_communicator.h"

// The one place that knows which transports were compiled in (DESIGN.md "#if HVD_HAVE_* lives
// only in the backend registry").
#if !defined(HVD_HAVE_GLOO)
#define HVD_HAVE_GLOO 0
#endif
#if !defined(HVD_HAVE_MPI)
#define HVD_HAVE_MPI 0
#endif
#if !defined(HVD_HAVE_NCCL)
#define HVD_HAVE_NCCL 0
#endif
#if HVD_HAVE_GLOO && __has_include("runtime/transports/gloo/gloo_communicator.h")
#define HVD_GLOO_TRANSPORT 1
#include "common/job_key.h"
#include "common/kv_client.h"
#include "runtime/transports/gloo/gloo_communicator.h"
#else
#define HVD_GLOO_TRANSPORT 0
#endif
#if HVD_HAVE_NCCL
#include "runtime/transports/nccl/cuda_backend.h"
#endif
#if HVD_HAVE_MPI
#include "runtime/transports/mpi/mpi_provider.h"
#if HVD_GLOO_TRANSPORT
#include "runtime/transports/gloo/gloo_collective_store.h"
#endif
#endif

namespace hvd::runtime {
namespace {

// One process: no rendezvous and no MPI is started. gloo_enabled()/mpi_enabled() still report
// the controller this launch stands for, as Horovod's do for a one-rank job (they were both
// False until 2026-12-01): mpirun's or HVD_CONTROLLER=mpi's MPI where the build has MPI,
// otherwise hvdrun's rendezvous (Horovod's Gloo role), as hvdrun -np 2 reports.
class SingleRankProvider : public CommunicatorProvider {
 public:
  explicit SingleRankProvider(uint32_t flags) : flags_(flags) {}
  Result<std::unique_ptr<Communicator>> Create(const GroupSpec& spec) override {
    if (spec.ranks.size() != 1) {
      return Status::InvalidArgument("a single-process job cannot form a group of " +
                                     std::to_string(spec.ranks.size()) + " ranks");
    }
    return std::unique_ptr<Communicator>(new SingleRankCommunicator());
  }
  uint32_t enabled_flags() const override { return flags_; }

 private:
  uint32_t flags_;
};

// Connects to hvdrun's KV server with the job key read from HVD_SECRET_FD.
Result<std::unique_ptr<control::KvClient>> ConnectRendezvous(const RuntimeConfig& config,
                                                             control::JobKey* key) {
  if (config.secret_fd < 0) {
    return Status::InvalidArgument(
        "HVD_SECRET_FD is not set: workers must be started by hvdrun, which passes the job key");
  }
  HVD_ASSIGN_OR_RETURN(*key, control::ReadKeyFromFd(config.secret_fd));
  auto kv = control::KvClient::Connect(config.rendezvous_addr,
                                       static_cast<uint16_t>(config.rendezvous_port), *key,
                                       config.job_id, config.timeout);
  if (!kv.ok()) {
    return kv.status().WithContext(
        "rank " + std::to_string(config.rank) + ": connecting to the rendezvous server " +
        config.rendezvous_addr + ":" + std::to_string(config.rendezvous_port));
  }
  return std::move(kv).value();
}

// HVD_CPU_OPERATIONS=tcp: hvd's own TCP communicators (tcp_communicator.h), authenticated with
// the job key, rendezvousing through hvdrun's KV server.
class TcpProvider : public CommunicatorProvider {
 public:
  TcpProvider(std::unique_ptr<control::KvClient> kv, const control::JobKey& key,
              const RuntimeConfig& config)
      : kv_(std::move(kv)), key_(key), config_(config) {}

  Result<std::unique_ptr<Communicator>> Create(const GroupSpec& spec) override {
    if (spec.ranks.size() == 1) return std::unique_ptr<Communicator>(new SingleRankCommunicator());
    TcpOptions options;
    options.kv = kv_.get();
    options.scope = spec.scope;
    options.rank = spec.rank_in_group;
    options.size = static_cast<int>(spec.ranks.size());
    options.iface = config_.gloo_iface;
    options.route_to = config_.rendezvous_addr;
    options.hostname = config_.hostname;
    options.key = key_;
    options.job_id = config_.job_id;
    options.timeout = config_.timeout;
    options.heartbeat_timeout = config_.heartbeat_timeout;
    options.congestion = config_.tcp_congestion;
    options.abortable = config_.rendezvous_round > 0;  // an elastic round (runtime_config.h)
    options.halving_bytes = config_.tcp_halving_bytes;
    // A CPU for every rank of this host: waits may poll busily for a while (tcp_transport.h).
    // More ranks than CPUs: they poll a while too, yielding the CPU between tries, as the shm
    // channel does. 4 ranks on the 2-vCPU VM (2026-11-23, three runs each): 4 KiB 230-268 ->
    // 106-169 us, 64 KiB 371-412 -> 172-321 us, 1 MiB 2.0-2.2 -> 1.24-1.70 ms, 100 x 16 KiB one
    // by one 29.5-30.9 -> 12.8-16.7 ms; 50 us budgets gained less, 200-400 us the same.
    // Ranks on this machine (several "hosts" may be one: GroupSpec::ranks_on_machine, found by
    // the shm provider under auto).
    const bool cpu_per_rank = CpuPerRank(RanksOnMachine(config_, spec));
    options.busy_poll = std::chrono::microseconds(cpu_per_rank ? 50 : 100);
    options.busy_yield = !cpu_per_rank;
    return CreateTcpCommunicator(options);
  }
  // hvdrun's rendezvous is Horovod's Gloo controller's role (horovodrun without --mpi), and
  // scripts ask gloo_enabled() to tell that launch from mpirun's: the same answer here.
  uint32_t enabled_flags() const override { return HVD_BUILT_GLOO; }
  control::KvClient* kv() override { return kv_.get(); }

 private:
  std::unique_ptr<control::KvClient> kv_;
  control::JobKey key_;
  RuntimeConfig config_;
};

Result<std::unique_ptr<CommunicatorProvider>> ConnectTcp(const RuntimeConfig& config) {
  control::JobKey key{};
  HVD_ASSIGN_OR_RETURN(auto kv, ConnectRendezvous(config, &key));
  return std::unique_ptr<CommunicatorProvider>(new TcpProvider(std::move(kv), key, config));
}

#if HVD_GLOO_TRANSPORT
// Creates Gloo communicators that rendezvous through hvdrun's KV server.
class GlooProvider : public CommunicatorProvider {
 public:
  GlooProvider(std::unique_ptr<control::KvClient> kv, const RuntimeConfig& config)
      : kv_(std::move(kv)), config_(config) {}

  Result<std::unique_ptr<Communicator>> Create(const GroupSpec& spec) override {
    if (spec.ranks.size() == 1) return std::unique_ptr<Communicator>(new SingleRankCommunicator());
    GlooOptions options;
    options.kv = kv_.get();
    options.scope = spec.scope;
    options.rank = spec.rank_in_group;
    options.size = static_cast<int>(spec.ranks.size());
    options.iface = config_.gloo_iface;
    options.timeout = config_.timeout;
    return CreateGlooCommunicator(options);
  }
  uint32_t enabled_flags() const override { return HVD_BUILT_GLOO; }
  control::KvClient* kv() override { return kv_.get(); }

 private:
  std::unique_ptr<control::KvClient> kv_;
  RuntimeConfig config_;
};

Result<std::unique_ptr<CommunicatorProvider>> ConnectGloo(const RuntimeConfig& config) {
  control::JobKey key{};
  HVD_ASSIGN_OR_RETURN(auto kv, ConnectRendezvous(config, &key));
  return std::unique_ptr<CommunicatorProvider>(new GlooProvider(std::move(kv), config));
}
#endif

// HVD_CONTROLLER=mpi: MPI for negotiation; data over MPI, or over Gloo bootstrapped through
// the group's MPI communicator (no rendezvous server, no job key).
Result<std::unique_ptr<CommunicatorProvider>> ConnectMpi(const RuntimeConfig& config) {
#if !HVD_HAVE_MPI
  return Status::Unimplemented(
      std::string(config.launched_by_mpirun ? "started by mpirun, but " : "HVD_CONTROLLER=mpi: ") +
      "this libhvd was built without MPI (install libopenmpi-dev and rebuild, or launch with "
      "hvdrun without --mpi)");
#else
  if (config.cpu_operations == "mpi") return CreateMpiProvider(config, nullptr, HVD_BUILT_MPI);
#if HVD_GLOO_TRANSPORT
  if (config.cpu_operations == "gloo") {
    if (config.gloo_iface.empty() && config.local_size < config.size) {
      return Status::InvalidArgument(
          "HVD_CPU_OPERATIONS=gloo under mpirun across hosts needs HVD_GLOO_IFACE (hvdrun --mpi "
          "--network-interface NIC)");
    }
    auto gloo = [config](Communicator* control,
                         const GroupSpec& spec) -> Result<std::unique_ptr<Communicator>> {
      GlooCollectiveStore store(control);
      GlooOptions options;
      options.store = &store;
      options.scope = spec.scope;
      options.rank = spec.rank_in_group;
      options.size = static_cast<int>(spec.ranks.size());
      options.iface = config.gloo_iface;
      options.timeout = config.timeout;
      auto comm = CreateGlooCommunicator(options);
      if (!comm.ok() && !store.first_error().ok()) return store.first_error();
      return comm;
    };
    return CreateMpiProvider(config, gloo, HVD_BUILT_MPI | HVD_BUILT_GLOO);
  }
#endif
  return Status::InvalidArgument("HVD_CPU_OPERATIONS=" + config.cpu_operations +
                                 " is not available with HVD_CONTROLLER=mpi (use mpi or gloo)");
#endif
}

// HVD_CPU_OPERATIONS=shm|auto: shared memory for groups on one host (shm_provider.h); under
// auto every other group goes to Gloo (tcp when built without Gloo), under shm it is an error.
Result<std::unique_ptr<CommunicatorProvider>> ConnectShm(const RuntimeConfig& config) {
  std::unique_ptr<CommunicatorProvider> fallback;
  // hvd's own TCP transport beats Gloo at every size on the benchmarks (bench/README.md), so
  // auto uses it for groups that span hosts.
  if (config.cpu_operations == "auto") {
    HVD_ASSIGN_OR_RETURN(fallback, ConnectTcp(config));
  }
  control::JobKey key{};
  HVD_ASSIGN_OR_RETURN(auto kv, ConnectRendezvous(config, &key));
  return std::unique_ptr<CommunicatorProvider>(
      new ShmProvider(std::move(kv), config, std::move(fallback)));
}

}  // namespace

Result<std::unique_ptr<CommunicatorProvider>> CreateDefaultProvider(const RuntimeConfig& config) {
  if (config.size == 1) {
    const bool mpi = config.controller == "mpi" && (BuildFlags() & HVD_BUILT_MPI) != 0;
    return std::unique_ptr<CommunicatorProvider>(
        new SingleRankProvider(mpi ? HVD_BUILT_MPI : HVD_BUILT_GLOO));
  }
  if (config.controller == "mpi") return ConnectMpi(config);
  if (config.launched_by_mpirun) {
    return Status::InvalidArgument(
        "started by mpirun with HVD_CONTROLLER=gloo: hvdrun's rendezvous is not available under "
        "mpirun; use HVD_CONTROLLER=mpi (the default) and HVD_CPU_OPERATIONS=gloo for Gloo data");
  }
  if (config.cpu_operations == "mpi") {
    return Status::InvalidArgument(
        "HVD_CPU_OPERATIONS=mpi needs the ranks started by mpirun (hvdrun --mpi)");
  }
  if (config.rendezvous_addr.empty()) {
    return Status::InvalidArgument("HVD_SIZE is " + std::to_string(config.size) +
                                   " but HVD_RENDEZVOUS_ADDR is unset; start workers with hvdrun");
  }
  if (config.cpu_operations == "tcp") return ConnectTcp(config);
  if (config.cpu_operations == "shm" || config.cpu_operations == "auto") return ConnectShm(config);
#if HVD_GLOO_TRANSPORT
  return ConnectGloo(config);
#else
  return Status::Unimplemented("this libhvd was built without the Gloo transport");
#endif
}

uint32_t BuildFlags() {
  uint32_t flags = 0;
  if (HVD_GLOO_TRANSPORT) flags |= HVD_BUILT_GLOO;
  if (HVD_HAVE_MPI) flags |= HVD_BUILT_MPI;
  if (HVD_HAVE_NCCL) flags |= HVD_BUILT_NCCL | HVD_BUILT_CUDA;
  return flags;
}

int32_t NcclVersionCode() {
#if HVD_HAVE_NCCL
  return NcclBuiltVersion();
#else
  return 0;
#endif
}

std::unique_ptr<GpuBackend> CreateGpuBackend() {
#if HVD_HAVE_NCCL
  return MakeCudaBackend();
#else
  return nullptr;
#endif
}

}  // namespace hvd::runtime
