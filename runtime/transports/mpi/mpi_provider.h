#ifndef HVD_RUNTIME_TRANSPORTS_MPI_MPI_PROVIDER_H_
#define HVD_RUNTIME_TRANSPORTS_MPI_MPI_PROVIDER_H_

#include <functional>
#include <memory>

#include "common/status.h"
#include "runtime/runtime_config.h"
#include "runtime/transports/backend_registry.h"
#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// Makes the data-plane communicator of a group whose control plane is `control` (an MPI
// communicator of the same group, usable for bootstrapping, e.g. a Gloo rendezvous).
using DataCommunicatorFactory = std::function<Result<std::unique_ptr<Communicator>>(
    Communicator* control, const GroupSpec& spec)>;

// HVD_CONTROLLER=mpi: the provider of a job started by mpirun. Initializes MPI (MpiSession),
// checks that MPI_COMM_WORLD matches config.rank / config.size, and creates one MPI
// communicator per group (mpi_communicator.h). With `data` unset the MPI communicator does
// everything (HVD_CPU_OPERATIONS=mpi); otherwise collectives on tensors go to data(...)'s
// communicator and negotiation stays on MPI (split_communicator.h). No rendezvous server and
// no job key are involved: mpirun already connected the processes. CrossTopology() reports
// Horovod's cross rank/size computed over MPI.
Result<std::unique_ptr<CommunicatorProvider>> CreateMpiProvider(const RuntimeConfig& config,
                                                                DataCommunicatorFactory data,
                                                                uint32_t enabled_flags);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_MPI_MPI_PROVIDER_H_
