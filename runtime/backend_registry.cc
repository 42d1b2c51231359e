#include "runtime/backend_registry.h"

#include "runtime/include/hvd/c_api.h"
#include "runtime/single_rank_communicator.h"

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
#if HVD_HAVE_GLOO && __has_include("runtime/gloo_communicator.h")
#define HVD_GLOO_TRANSPORT 1
#include "common/job_key.h"
#include "common/kv_client.h"
#include "runtime/gloo_communicator.h"
#else
#define HVD_GLOO_TRANSPORT 0
#endif

namespace hvd::runtime {
namespace {

class SingleRankProvider : public CommunicatorProvider {
 public:
  Result<std::unique_ptr<Communicator>> Create(const GroupSpec& spec) override {
    if (spec.ranks.size() != 1) {
      return Status::InvalidArgument("a single-process job cannot form a group of " +
                                     std::to_string(spec.ranks.size()) + " ranks");
    }
    return std::unique_ptr<Communicator>(new SingleRankCommunicator());
  }
  uint32_t enabled_flags() const override { return 0; }
};

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

 private:
  std::unique_ptr<control::KvClient> kv_;
  RuntimeConfig config_;
};

Result<std::unique_ptr<CommunicatorProvider>> ConnectGloo(const RuntimeConfig& config) {
  if (config.secret_fd < 0) {
    return Status::InvalidArgument(
        "HVD_SECRET_FD is not set: workers must be started by hvdrun, which passes the job key");
  }
  HVD_ASSIGN_OR_RETURN(control::JobKey key, control::ReadKeyFromFd(config.secret_fd));
  auto kv = control::KvClient::Connect(config.rendezvous_addr,
                                       static_cast<uint16_t>(config.rendezvous_port), key,
                                       config.job_id, config.timeout);
  if (!kv.ok()) {
    return kv.status().WithContext(
        "rank " + std::to_string(config.rank) + ": connecting to the rendezvous server " +
        config.rendezvous_addr + ":" + std::to_string(config.rendezvous_port));
  }
  return std::unique_ptr<CommunicatorProvider>(new GlooProvider(std::move(kv).value(), config));
}
#endif

}  // namespace

Result<std::unique_ptr<CommunicatorProvider>> CreateDefaultProvider(const RuntimeConfig& config) {
  if (config.size == 1) return std::unique_ptr<CommunicatorProvider>(new SingleRankProvider());
  if (config.rendezvous_addr.empty()) {
    return Status::InvalidArgument("HVD_SIZE is " + std::to_string(config.size) +
                                   " but HVD_RENDEZVOUS_ADDR is unset; start workers with hvdrun");
  }
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

}  // namespace hvd::runtime
