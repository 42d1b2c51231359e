#ifndef HVD_RUNTIME_TRANSPORTS_SINGLE_RANK_COMMUNICATOR_H_
#define HVD_RUNTIME_TRANSPORTS_SINGLE_RANK_COMMUNICATOR_H_

#include <atomic>
#include <memory>

#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// The communicator of a group with one member (a job without rendezvous, or a process set of
// one rank): every collective is a local copy. Thread-compatible like any Communicator; Abort
// is thread-safe.
class SingleRankCommunicator : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* name() const override { return "LOCAL"; }

  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out) override;
  Status BroadcastBytes(std::string* data, int root) override;
  Status BitwiseAnd(std::vector<uint64_t>* bits) override;
  Status BitwiseOr(std::vector<uint64_t>* bits) override;
  Status Barrier() override;
  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buffer, int64_t bytes, int root) override;
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override;
  Status ReduceScatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op) override;
  void Abort() override { aborted_ = true; }

 private:
  Status Check(const char* op) const;
  std::atomic<bool> aborted_{false};
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SINGLE_RANK_COMMUNICATOR_H_
