#ifndef HVD_RUNTIME_TRANSPORTS_MPI_MPI_COMMUNICATOR_H_
#define HVD_RUNTIME_TRANSPORTS_MPI_MPI_COMMUNICATOR_H_

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/transports/communicator.h"
#include "runtime/transports/mpi/mpi_session.h"

namespace hvd::runtime {

// Creates the MPI communicators of one runtime: the global group is a duplicate of
// MPI_COMM_WORLD (MPI_Comm_idup, so even that has a deadline), a process set is
// MPI_Comm_create_group over the members' global ranks (which are MPI_COMM_WORLD ranks: the
// job was started by mpirun). Used by one thread at a time, like CommunicatorProvider.
class MpiCommunicatorFactory {
 public:
  // Fails unless MPI_COMM_WORLD has `size` ranks and this process is `rank` in it.
  static Result<std::unique_ptr<MpiCommunicatorFactory>> Create(MpiSession* session, int rank,
                                                                int size,
                                                                std::chrono::milliseconds timeout);
  ~MpiCommunicatorFactory();

  // `ranks` are global ranks in group order, this process among them; `scope` is the same on
  // every member (it picks the MPI tag of the creation).
  Result<std::unique_ptr<Communicator>> CreateGroup(const std::vector<int32_t>& ranks,
                                                    const std::string& scope);

  // This process's cross rank and size as Horovod defines them (position among the ranks with
  // the same local rank; local = same shared-memory node), computed over MPI_COMM_WORLD.
  Status CrossTopology(int32_t* cross_rank, int32_t* cross_size);

 private:
  MpiCommunicatorFactory(MpiSession* session, std::chrono::milliseconds timeout)
      : session_(session), timeout_(timeout) {}

  MpiSession* const session_;
  const std::chrono::milliseconds timeout_;
  MPI_Comm base_ = MPI_COMM_NULL;  // this factory's duplicate of MPI_COMM_WORLD
};

// Wraps `comm` (owned; freed at destruction while MPI is still initialized) as a Communicator:
// every collective is MPI's nonblocking one (MPI_Iallreduce, MPI_Igatherv, ...) completed by
// polling MPI_Test -- spinning briefly, then napping in growing steps -- so that Abort() from
// another thread and the deadline (`timeout`) end the wait: kAborted / kTimeout, and an MPI
// error code becomes kRemoteError; never MPI_Abort. A failure breaks the communicator (every
// later call returns it), because an MPI collective that was started cannot be cancelled.
// Thread-compatible (one caller thread), Abort() thread-safe.
std::unique_ptr<Communicator> WrapMpiComm(MPI_Comm comm, MpiSession* session,
                                          std::chrono::milliseconds timeout);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_MPI_MPI_COMMUNICATOR_H_
