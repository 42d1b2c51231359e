#include "runtime/transports/mpi/mpi_communicator.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstring>
#include <functional>
#include <thread>

#include "common/logging.h"

namespace hvd::runtime {
namespace {

using Clock = std::chrono::steady_clock;

// Waiting: MPI_Test back to back for kSpin (small collectives finish here, and Open MPI's
// nonblocking schedules progress only inside MPI calls), then naps growing to kMaxNap.
constexpr auto kSpin = std::chrono::microseconds(500);
constexpr auto kFirstNap = std::chrono::microseconds(10);
constexpr auto kMaxNap = std::chrono::microseconds(200);

bool MpiFinalized() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  return finalized != 0;
}

// Waits for `request` until done, `aborted`, or `deadline`; OK, kAborted, kTimeout or the
// MPI error. what() names the call in those errors (built only for them). A wait given up
// (aborted, timed out) leaves the request pending: `session` is abandoned with it
// (MpiSession::Abandon: the caller's buffers stay MPI's, so hvd makes no MPI call again).
template <typename Name>
Status WaitRequest(MPI_Request* request, const std::atomic<bool>& aborted,
                   Clock::time_point deadline, const Name& what, MpiSession* session) {
  const auto start = Clock::now();
  auto nap = kFirstNap;
  while (true) {
    int done = 0;
    int rc = MPI_Test(request, &done, MPI_STATUS_IGNORE);
    if (rc != MPI_SUCCESS) return MpiError(rc, what());
    if (done) return Status::OK();
    Status given_up;
    const auto now = Clock::now();
    if (aborted.load()) {
      given_up = Status::Aborted(what() + ": the communicator was aborted");
    } else if (now >= deadline) {
      // MPI shows no progress: a collective still moving (2 GiB over 1 Gbit/s) counts as stuck.
      given_up = Status::Timeout(what() +
                                 ": not complete within the timeout (HVD_GLOO_TIMEOUT_SECONDS): "
                                 "a peer did not arrive, or the transfer is slower than that (MPI "
                                 "shows no progress; raise the timeout for large tensors)");
    }
    if (!given_up.ok()) {
      session->Abandon(given_up);
      return given_up;
    }
    if (now - start > kSpin) {
      std::this_thread::sleep_for(nap);
      nap = std::min(nap * 2, kMaxNap);
    }
  }
}

// Per-rank byte counts and displacements as MPI's ints (into the vectors' existing capacity);
// InvalidArgument past INT_MAX, naming what().
template <typename Name>
Status ToCounts(const std::vector<int64_t>& bytes, std::vector<int>* counts,
                std::vector<int>* displs, const Name& what) {
  counts->resize(bytes.size());
  displs->resize(bytes.size());
  int64_t offset = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] < 0 || bytes[i] > INT_MAX || offset > INT_MAX) {
      return Status::InvalidArgument(what() + ": per-rank sizes must be in [0, 2 GiB) in total");
    }
    (*counts)[i] = static_cast<int>(bytes[i]);
    (*displs)[i] = static_cast<int>(offset);
    offset += bytes[i];
  }
  return Status::OK();
}

// A successful collective allocates nothing once its shape has been seen: names and error
// context are built only on the error path, per-rank tables live in reused members, and the
// posting lambdas are passed as templates (no std::function).
class MpiCommunicator final : public Communicator {
 public:
  MpiCommunicator(MPI_Comm comm, MpiSession* session, std::chrono::milliseconds timeout)
      : comm_(comm), session_(session), timeout_(timeout) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
  }
  ~MpiCommunicator() override {
    // A communicator with a collective still pending (after a timeout or abort) is leaked:
    // freeing it would wait for that collective.
    if (broken_.ok() && !aborted_.load() && !session_->abandoned() && !MpiFinalized()) {
      MPI_Comm_free(&comm_);
    }
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return "MPI"; }

  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out) override;
  Status BroadcastBytes(std::string* data, int root) override;
  Status BitwiseAnd(std::vector<uint64_t>* bits) override { return Bitwise(bits, MPI_BAND); }
  Status BitwiseOr(std::vector<uint64_t>* bits) override { return Bitwise(bits, MPI_BOR); }
  Status Barrier() override {
    return Run("barrier", [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  }
  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buffer, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  Status ReduceScatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op) override;
  void Abort() override { aborted_.store(true); }

 private:
  std::string What(const std::string& op) const {
    return "mpi " + op + " on rank " + std::to_string(rank_) + " of " + std::to_string(size_);
  }
  // Starts one nonblocking collective with post(MPI_Request*) and waits for it; any failure
  // breaks the communicator. name() is the op's name, called only on the error path.
  template <typename Name, typename Post>
  Status RunNamed(const Name& name, const Post& post);
  template <typename Post>
  Status Run(const char* op, const Post& post) {
    return RunNamed([op] { return std::string(op); }, post);
  }
  Status Bitwise(std::vector<uint64_t>* bits, MPI_Op op);
  // The shared argument checks (communicator.h), whose messages are built only on failure.
  Status CheckRoot(const char* op, int root) const {
    return CheckRootArg([&] { return What(op); }, root, size_);
  }
  Status CheckPerRank(const char* op, const std::vector<int64_t>& v) const {
    return CheckPerRankArg([&] { return What(op); }, v, size_);
  }

  MPI_Comm comm_;
  MpiSession* const session_;
  const std::chrono::milliseconds timeout_;
  int rank_ = 0;
  int size_ = 1;
  std::atomic<bool> aborted_{false};
  Status broken_;  // first failure; touched only by the calling thread
  // Reused per-call tables (capacity kept): counts and displacements (the send side's for
  // alltoallv), the receive side's, and the byte-string gather's lengths and buffer.
  std::vector<int> counts_, displs_, counts2_, displs2_;
  std::vector<int64_t> lengths_;
  std::string gathered_;
};

template <typename Name, typename Post>
Status MpiCommunicator::RunNamed(const Name& name, const Post& post) {
  const auto what = [&] { return What(name()); };
  if (aborted_.load()) return Status::Aborted(what() + ": the communicator was aborted");
  if (!broken_.ok()) return broken_.WithContext(what() + ": communicator failed earlier");
  HVD_RETURN_IF_ERROR(session_->Usable(what()));
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = post(&request);
  Status s = rc == MPI_SUCCESS
                 ? WaitRequest(&request, aborted_, Clock::now() + timeout_, what, session_)
                 : MpiError(rc, what());
  if (!s.ok()) broken_ = s;
  return s;
}

Status MpiCommunicator::GatherBytes(const std::string& in, int root,
                                    std::vector<std::string>* out) {
  HVD_RETURN_IF_ERROR(CheckRoot("gather", root));
  int64_t mine = static_cast<int64_t>(in.size());
  lengths_.resize(rank_ == root ? size_ : 0);
  HVD_RETURN_IF_ERROR(Run("gather (lengths)", [&](MPI_Request* r) {
    return MPI_Igather(&mine, 1, MPI_INT64_T, lengths_.data(), 1, MPI_INT64_T, root, comm_, r);
  }));
  counts_.clear();
  displs_.clear();
  gathered_.clear();
  if (rank_ == root) {
    // Control messages are small; a root that cannot take them breaks the group (peers then
    // time out) rather than returning with its peers inside the gather.
    Status s = ToCounts(lengths_, &counts_, &displs_, [&] { return What("gather"); });
    if (!s.ok()) return broken_ = s;
    gathered_.resize(static_cast<size_t>(displs_.back()) + counts_.back());
  } else if (mine > INT_MAX) {
    return broken_ = Status::InvalidArgument(What("gather") + ": message over 2 GiB");
  }
  HVD_RETURN_IF_ERROR(Run("gather", [&](MPI_Request* r) {
    return MPI_Igatherv(in.data(), static_cast<int>(mine), MPI_BYTE, gathered_.data(),
                        counts_.data(), displs_.data(), MPI_BYTE, root, comm_, r);
  }));
  if (rank_ == root) {
    out->resize(size_);
    for (int i = 0; i < size_; ++i) (*out)[i].assign(gathered_, displs_[i], counts_[i]);
  }
  return Status::OK();
}

Status MpiCommunicator::BroadcastBytes(std::string* data, int root) {
  HVD_RETURN_IF_ERROR(CheckRoot("broadcast", root));
  int64_t length = static_cast<int64_t>(data->size());
  HVD_RETURN_IF_ERROR(Run("broadcast (length)", [&](MPI_Request* r) {
    return MPI_Ibcast(&length, 1, MPI_INT64_T, root, comm_, r);
  }));
  if (length < 0 || static_cast<uint64_t>(length) > kMaxByteMessage) {
    return broken_ = Status::RemoteError(What("broadcast") + ": rank " + std::to_string(root) +
                                         " announced " + std::to_string(length) +
                                         " bytes, outside [0, 1 GiB]");
  }
  data->resize(static_cast<size_t>(length));
  return Broadcast(data->data(), length, root);
}

Status MpiCommunicator::Bitwise(std::vector<uint64_t>* bits, MPI_Op op) {
  const char* what = op == MPI_BAND ? "bitwise and" : "bitwise or";
  if (bits->size() > INT_MAX) return Status::InvalidArgument(What(what) + ": too many words");
  if (bits->empty()) return Run(what, [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  return Run(what, [&](MPI_Request* r) {
    return MPI_Iallreduce(MPI_IN_PLACE, bits->data(), static_cast<int>(bits->size()), MPI_UINT64_T,
                          op, comm_, r);
  });
}

Status MpiCommunicator::Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) {
  const auto what = [&] { return AllreduceOpName(count, dtype, op); };
  HVD_RETURN_IF_ERROR(CheckAllreduceArgs([&] { return What(what()); }, buffer, count, op));
  if (count > INT_MAX) {
    return Status::InvalidArgument(What(what()) + ": more than INT_MAX elements per call");
  }
  Result<MPI_Op> mpi_op = session_->Op(dtype, op);
  if (!mpi_op.ok()) return mpi_op.status().WithContext(What(what()));
  if (count == 0) return RunNamed(what, [&](MPI_Request* r) { return MPI_Ibarrier(comm_, r); });
  return RunNamed(what, [&](MPI_Request* r) {
    return MPI_Iallreduce(MPI_IN_PLACE, buffer, static_cast<int>(count), session_->Type(dtype),
                          *mpi_op, comm_, r);
  });
}

Status MpiCommunicator::Allgatherv(const void* in, void* out,
                                   const std::vector<int64_t>& bytes_per_rank) {
  HVD_RETURN_IF_ERROR(CheckPerRank("allgather", bytes_per_rank));
  HVD_RETURN_IF_ERROR(
      ToCounts(bytes_per_rank, &counts_, &displs_, [&] { return What("allgather"); }));
  char* base = static_cast<char*>(out);
  const void* send = in == base + displs_[rank_] ? MPI_IN_PLACE : in;
  return Run("allgather", [&](MPI_Request* r) {
    return MPI_Iallgatherv(send, counts_[rank_], MPI_BYTE, out, counts_.data(), displs_.data(),
                           MPI_BYTE, comm_, r);
  });
}

Status MpiCommunicator::Broadcast(void* buffer, int64_t bytes, int root) {
  HVD_RETURN_IF_ERROR(CheckRoot("broadcast", root));
  if (bytes < 0) return Status::InvalidArgument(What("broadcast") + ": negative size");
  char* at = static_cast<char*>(buffer);
  do {  // in pieces of at most INT_MAX bytes; a zero-byte broadcast still synchronizes
    const int piece = static_cast<int>(std::min<int64_t>(bytes, INT_MAX));
    HVD_RETURN_IF_ERROR(Run("broadcast", [&](MPI_Request* r) {
      return MPI_Ibcast(at, piece, MPI_BYTE, root, comm_, r);
    }));
    at += piece;
    bytes -= piece;
  } while (bytes > 0);
  return Status::OK();
}

Status MpiCommunicator::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                                  const std::vector<int64_t>& recv_bytes) {
  HVD_RETURN_IF_ERROR(CheckPerRank("alltoall", send_bytes));
  HVD_RETURN_IF_ERROR(CheckPerRank("alltoall", recv_bytes));
  const auto what = [&] { return What("alltoall"); };
  HVD_RETURN_IF_ERROR(ToCounts(send_bytes, &counts_, &displs_, what));
  HVD_RETURN_IF_ERROR(ToCounts(recv_bytes, &counts2_, &displs2_, what));
  return Run("alltoall", [&](MPI_Request* r) {
    return MPI_Ialltoallv(in, counts_.data(), displs_.data(), MPI_BYTE, out, counts2_.data(),
                          displs2_.data(), MPI_BYTE, comm_, r);
  });
}

Status MpiCommunicator::ReduceScatter(const void* in, void* out,
                                      const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                      ReduceOp op) {
  HVD_RETURN_IF_ERROR(CheckPerRank("reducescatter", counts_per_rank));
  const auto what = [&] {
    return std::string("reducescatter (") + DataTypeName(dtype) + " " + ReduceOpName(op) + ")";
  };
  if (op == ReduceOp::kAdasum) return Status::Unimplemented(What(what()) + ": Adasum");
  HVD_RETURN_IF_ERROR(ToCounts(counts_per_rank, &counts_, &displs_, [&] { return What(what()); }));
  Result<MPI_Op> mpi_op = session_->Op(dtype, op);
  if (!mpi_op.ok()) return mpi_op.status().WithContext(What(what()));
  const void* send = in == out ? MPI_IN_PLACE : in;
  return RunNamed(what, [&](MPI_Request* r) {
    return MPI_Ireduce_scatter(send, out, counts_.data(), session_->Type(dtype), *mpi_op, comm_, r);
  });
}

}  // namespace

std::unique_ptr<Communicator> WrapMpiComm(MPI_Comm comm, MpiSession* session,
                                          std::chrono::milliseconds timeout) {
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(comm, session, timeout);
}

Result<std::unique_ptr<MpiCommunicatorFactory>> MpiCommunicatorFactory::Create(
    MpiSession* session, int rank, int size, std::chrono::milliseconds timeout) {
  if (session->world_size() != size || session->world_rank() != rank) {
    return Status::InvalidArgument(
        "MPI_COMM_WORLD has this process as rank " + std::to_string(session->world_rank()) +
        " of " + std::to_string(session->world_size()) + ", but the environment says rank " +
        std::to_string(rank) + " of " + std::to_string(size) +
        " (HVD_CONTROLLER=mpi needs the ranks started by mpirun: hvdrun --mpi)");
  }
  std::unique_ptr<MpiCommunicatorFactory> factory(new MpiCommunicatorFactory(session, timeout));
  MPI_Request request = MPI_REQUEST_NULL;
  int rc = MPI_Comm_idup(MPI_COMM_WORLD, &factory->base_, &request);
  const std::atomic<bool> never_aborted{false};
  const auto what = [] { return std::string("duplicating MPI_COMM_WORLD"); };
  Status s = rc == MPI_SUCCESS
                 ? WaitRequest(&request, never_aborted, Clock::now() + timeout, what, session)
                 : MpiError(rc, what());
  if (!s.ok()) {
    factory->base_ = MPI_COMM_NULL;  // leaked with the pending request
    return s;
  }
  MPI_Comm_set_errhandler(factory->base_, MPI_ERRORS_RETURN);
  return factory;
}

MpiCommunicatorFactory::~MpiCommunicatorFactory() {
  if (base_ != MPI_COMM_NULL && !session_->abandoned() && !MpiFinalized()) MPI_Comm_free(&base_);
}

Result<std::unique_ptr<Communicator>> MpiCommunicatorFactory::CreateGroup(
    const std::vector<int32_t>& ranks, const std::string& scope) {
  const std::string what = "creating the MPI communicator of scope '" + scope + "'";
  HVD_RETURN_IF_ERROR(session_->Usable(what));
  MPI_Comm comm = MPI_COMM_NULL;
  int base_size = 0;
  MPI_Comm_size(base_, &base_size);
  int rc = MPI_SUCCESS;
  if (static_cast<int>(ranks.size()) == base_size && std::is_sorted(ranks.begin(), ranks.end())) {
    MPI_Request request = MPI_REQUEST_NULL;
    rc = MPI_Comm_idup(base_, &comm, &request);
    const std::atomic<bool> never_aborted{false};
    if (rc == MPI_SUCCESS) {
      HVD_RETURN_IF_ERROR(WaitRequest(
          &request, never_aborted, Clock::now() + timeout_, [&] { return what; }, session_));
    }
  } else {
    // Only the members take part (no deadline: MPI has no nonblocking form of this call).
    MPI_Group world_group = MPI_GROUP_NULL, group = MPI_GROUP_NULL;
    MPI_Comm_group(base_, &world_group);
    std::vector<int> members(ranks.begin(), ranks.end());
    rc = MPI_Group_incl(world_group, static_cast<int>(members.size()), members.data(), &group);
    const int tag = static_cast<int>(std::hash<std::string>()(scope) % 32768);
    if (rc == MPI_SUCCESS) rc = MPI_Comm_create_group(base_, group, tag, &comm);
    if (group != MPI_GROUP_NULL) MPI_Group_free(&group);
    MPI_Group_free(&world_group);
  }
  if (rc != MPI_SUCCESS) return MpiError(rc, what);
  return WrapMpiComm(comm, session_, timeout_);
}

Status MpiCommunicatorFactory::CrossTopology(int32_t* cross_rank, int32_t* cross_size) {
  HVD_RETURN_IF_ERROR(session_->Usable("computing the cross communicator"));
  MPI_Comm local = MPI_COMM_NULL, cross = MPI_COMM_NULL;
  int rank = 0, local_rank = 0, rc;
  MPI_Comm_rank(base_, &rank);
  rc = MPI_Comm_split_type(base_, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  if (rc == MPI_SUCCESS) MPI_Comm_rank(local, &local_rank);
  if (rc == MPI_SUCCESS) rc = MPI_Comm_split(base_, local_rank, rank, &cross);
  if (rc == MPI_SUCCESS) {
    MPI_Comm_rank(cross, cross_rank);
    MPI_Comm_size(cross, cross_size);
  }
  if (cross != MPI_COMM_NULL) MPI_Comm_free(&cross);
  if (local != MPI_COMM_NULL) MPI_Comm_free(&local);
  return rc == MPI_SUCCESS ? Status::OK() : MpiError(rc, "computing the cross communicator");
}

}  // namespace hvd::runtime
