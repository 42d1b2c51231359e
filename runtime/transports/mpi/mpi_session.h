#ifndef HVD_RUNTIME_TRANSPORTS_MPI_MPI_SESSION_H_
#define HVD_RUNTIME_TRANSPORTS_MPI_MPI_SESSION_H_

#include <mpi.h>

#include <atomic>
#include <mutex>
#include <string>

#include "common/status.h"
#include "runtime/transports/data_type.h"

namespace hvd::runtime {

// MpiSession is this process's use of MPI, which is process-global state by nature: the one
// MPI_Init_thread, the predefined and the few user-defined datatypes/ops the communicators
// share, and the MPI_Finalize at process exit. Acquire() initializes MPI on first use --
// MPI_THREAD_MULTIPLE, or MPI_THREAD_SINGLE with HVD_MPI_THREADS_DISABLE -- unless the
// application already did (mpi4py), in which case hvd neither re-initializes nor finalizes.
// MPI stays initialized across hvd_shutdown / hvd_init (MPI cannot be initialized twice);
// MPI_Finalize runs from an atexit handler, after the bindings' own exit hooks shut the runtime
// down. Errors on MPI_COMM_WORLD return codes (MPI_ERRORS_RETURN) instead of aborting the job.
// Thread-safe; the returned session lives until exit.
class MpiSession {
 public:
  static Result<MpiSession*> Acquire(bool threads_disabled);

  int world_rank() const { return world_rank_; }
  int world_size() const { return world_size_; }
  // The thread level MPI provides (MPI_THREAD_*).
  int thread_level() const { return thread_level_; }
  // A collective was left pending (its wait timed out, or the communicator was aborted): MPI
  // cannot cancel a collective, and any later MPI call of this process (another op, a
  // communicator's creation or free, MPI_Finalize) may progress it and write into buffers its
  // caller has freed since (a 1 GB allreduce past its timeout crashed the process in
  // MPI_Finalize, until 2026-12-01). So hvd makes no MPI call again in this process: every
  // later use fails with Usable()'s error, and MPI_Finalize is skipped at exit. Thread-safe.
  void Abandon(const Status& why);
  // OK, or the error naming the abandoned collective, with `what` (the refused use) first.
  Status Usable(const std::string& what) const;
  bool abandoned() const { return abandoned_.load(); }

  // The first line of MPI_Get_library_version ("Open MPI v4.1.4, ...").
  const std::string& library_version() const { return library_version_; }

  // The MPI datatype of `dtype` (float16 / bfloat16 / bool are session-defined 1- and 2-byte
  // types), and the MPI op reducing it: a predefined op where MPI has one for that type,
  // otherwise a session-defined op that runs runtime/reduction.h's kernel. kAverage and
  // kAdasum have none (InvalidArgument).
  MPI_Datatype Type(DataType dtype) const;
  Result<MPI_Op> Op(DataType dtype, ReduceOp op) const;

 private:
  MpiSession() = default;
  Status Start(bool threads_disabled);

  int world_rank_ = 0;
  int world_size_ = 1;
  int thread_level_ = MPI_THREAD_SINGLE;
  std::string library_version_;
  std::atomic<bool> abandoned_{false};
  mutable std::mutex abandon_mu_;
  Status abandoned_why_;  // guarded by abandon_mu_
  MPI_Datatype half_ = MPI_DATATYPE_NULL;
  MPI_Datatype bfloat16_ = MPI_DATATYPE_NULL;
  MPI_Datatype bool_ = MPI_DATATYPE_NULL;
  MPI_Op sum_ = MPI_OP_NULL, min_ = MPI_OP_NULL, max_ = MPI_OP_NULL, product_ = MPI_OP_NULL;
};

// A failed MPI call as a Status naming `what` and MPI's error string (kRemoteError).
Status MpiError(int code, const std::string& what);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_MPI_MPI_SESSION_H_
