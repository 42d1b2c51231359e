#include "runtime/transports/mpi/mpi_provider.h"

#include "runtime/transports/mpi/mpi_communicator.h"
#include "runtime/transports/single_rank_communicator.h"
#include "runtime/transports/split_communicator.h"

namespace hvd::runtime {
namespace {

class MpiProvider : public CommunicatorProvider {
 public:
  MpiProvider(std::unique_ptr<MpiCommunicatorFactory> factory, DataCommunicatorFactory data,
              uint32_t flags)
      : factory_(std::move(factory)), data_(std::move(data)), flags_(flags) {}

  Result<std::unique_ptr<Communicator>> Create(const GroupSpec& spec) override {
    if (spec.ranks.size() == 1) return std::unique_ptr<Communicator>(new SingleRankCommunicator());
    HVD_ASSIGN_OR_RETURN(auto control, factory_->CreateGroup(spec.ranks, spec.scope));
    if (!data_) return control;
    HVD_ASSIGN_OR_RETURN(auto data, data_(control.get(), spec));
    return std::unique_ptr<Communicator>(
        new SplitCommunicator(std::move(control), std::move(data)));
  }
  uint32_t enabled_flags() const override { return flags_; }
  bool CrossTopology(int32_t* cross_rank, int32_t* cross_size) override {
    Status s = factory_->CrossTopology(cross_rank, cross_size);
    return s.ok();
  }

 private:
  std::unique_ptr<MpiCommunicatorFactory> factory_;
  DataCommunicatorFactory data_;
  uint32_t flags_;
};

}  // namespace

Result<std::unique_ptr<CommunicatorProvider>> CreateMpiProvider(const RuntimeConfig& config,
                                                                DataCommunicatorFactory data,
                                                                uint32_t enabled_flags) {
  HVD_ASSIGN_OR_RETURN(MpiSession * session, MpiSession::Acquire(config.mpi_threads_disable));
  if (config.launched_by_mpirun &&
      (session->world_size() != config.size || session->world_rank() != config.rank)) {
    // The launcher's MPI is not this libhvd's: its MPI_Init found no job (MPICH's mpirun
    // starting ranks of an Open MPI build, or the other way round).
    return Status::InvalidArgument(
        config.topology_source + " say rank " + std::to_string(config.rank) + " of " +
        std::to_string(config.size) + ", but MPI_COMM_WORLD has this process as rank " +
        std::to_string(session->world_rank()) + " of " + std::to_string(session->world_size()) +
        ": the ranks were started by an mpirun of another MPI than this libhvd's (" +
        session->library_version() +
        "); use that MPI's mpirun (first on PATH for hvdrun --mpi), or hvdrun without --mpi");
  }
  HVD_ASSIGN_OR_RETURN(auto factory, MpiCommunicatorFactory::Create(session, config.rank,
                                                                    config.size, config.timeout));
  return std::unique_ptr<CommunicatorProvider>(
      new MpiProvider(std::move(factory), std::move(data), enabled_flags));
}

}  // namespace hvd::runtime
