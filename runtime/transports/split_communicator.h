#ifndef HVD_RUNTIME_TRANSPORTS_SPLIT_COMMUNICATOR_H_
#define HVD_RUNTIME_TRANSPORTS_SPLIT_COMMUNICATOR_H_

#include <memory>

#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// A Communicator whose control plane (GatherBytes, BroadcastBytes, BitwiseAnd/Or, Barrier)
// and data plane (Allreduce, Allgatherv, Broadcast, Alltoallv, ReduceScatter) are two
// communicators over the same group -- Horovod's HVD_CONTROLLER=mpi with
// HVD_CPU_OPERATIONS=gloo. name() is the data plane's. Abort() aborts both. Same threading
// contract as Communicator.
class SplitCommunicator final : public Communicator {
 public:
  SplitCommunicator(std::unique_ptr<Communicator> control, std::unique_ptr<Communicator> data)
      : control_(std::move(control)), data_(std::move(data)) {}

  int rank() const override { return data_->rank(); }
  int size() const override { return data_->size(); }
  const char* name() const override { return data_->name(); }

  Status GatherBytes(const std::string& in, int root, std::vector<std::string>* out) override {
    return control_->GatherBytes(in, root, out);
  }
  Status BroadcastBytes(std::string* data, int root) override {
    return control_->BroadcastBytes(data, root);
  }
  Status BitwiseAnd(std::vector<uint64_t>* bits) override { return control_->BitwiseAnd(bits); }
  Status BitwiseOr(std::vector<uint64_t>* bits) override { return control_->BitwiseOr(bits); }
  Status Barrier() override { return control_->Barrier(); }

  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) override {
    return data_->Allreduce(buffer, count, dtype, op);
  }
  Status AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                         double scale) override {
    return data_->AllreduceScaled(buffer, count, dtype, op, scale);
  }
  bool allreduces_pieces() const override { return data_->allreduces_pieces(); }
  Status AllreducePieces(std::span<const AllreducePiece> pieces, DataType dtype,
                         ReduceOp op) override {
    return data_->AllreducePieces(pieces, dtype, op);
  }
  Status AllreducePiecesScaled(std::span<const AllreducePiece> pieces, DataType dtype, ReduceOp op,
                               double scale) override {
    return data_->AllreducePiecesScaled(pieces, dtype, op, scale);
  }
  Status ReduceScatterPieces(std::span<const AllreducePiece> pieces, void* out,
                             const std::vector<int64_t>& counts_per_rank, DataType dtype,
                             ReduceOp op) override {
    return data_->ReduceScatterPieces(pieces, out, counts_per_rank, dtype, op);
  }
  Status ReduceScatterPiecesScaled(std::span<const AllreducePiece> pieces, void* out,
                                   const std::vector<int64_t>& counts_per_rank, DataType dtype,
                                   ReduceOp op, double scale) override {
    return data_->ReduceScatterPiecesScaled(pieces, out, counts_per_rank, dtype, op, scale);
  }
  Status AllgatherPieces(const void* in, std::span<const AllreducePiece> pieces,
                         const std::vector<int64_t>& counts_per_rank, DataType dtype) override {
    return data_->AllgatherPieces(in, pieces, counts_per_rank, dtype);
  }
  Status Allgatherv(const void* in, void* out,
                    const std::vector<int64_t>& bytes_per_rank) override {
    return data_->Allgatherv(in, out, bytes_per_rank);
  }
  Status Broadcast(void* buffer, int64_t bytes, int root) override {
    return data_->Broadcast(buffer, bytes, root);
  }
  Status Alltoallv(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                   const std::vector<int64_t>& recv_bytes) override {
    return data_->Alltoallv(in, send_bytes, out, recv_bytes);
  }
  Status AlltoallvAgreed(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                         const std::vector<int64_t>& recv_bytes, int64_t max_piece) override {
    return data_->AlltoallvAgreed(in, send_bytes, out, recv_bytes, max_piece);
  }
  Status ReduceScatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op) override {
    return data_->ReduceScatter(in, out, counts_per_rank, dtype, op);
  }
  Status ReduceScatterScaled(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                             DataType dtype, ReduceOp op, double scale) override {
    return data_->ReduceScatterScaled(in, out, counts_per_rank, dtype, op, scale);
  }
  void Abort() override {
    control_->Abort();
    data_->Abort();
  }
  Status CheckPeers() override {
    HVD_RETURN_IF_ERROR(control_->CheckPeers());
    return data_->CheckPeers();
  }
  int lost_member() const override {
    const int lost = control_->lost_member();
    return lost >= 0 ? lost : data_->lost_member();
  }

 private:
  std::unique_ptr<Communicator> control_;
  std::unique_ptr<Communicator> data_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_SPLIT_COMMUNICATOR_H_
