#include "runtime/transports/single_rank_communicator.h"

#include <cstring>

namespace hvd::runtime {

Status SingleRankCommunicator::Check(const char* op) const {
  if (aborted_) return Status::Aborted(std::string(op) + ": communicator was aborted");
  return Status::OK();
}

Status SingleRankCommunicator::GatherBytes(const std::string& in, int root,
                                           std::vector<std::string>* out) {
  HVD_RETURN_IF_ERROR(Check("GatherBytes"));
  *out = {in};
  return Status::OK();
}

Status SingleRankCommunicator::BroadcastBytes(std::string* data, int root) {
  return Check("BroadcastBytes");
}

Status SingleRankCommunicator::BitwiseAnd(std::vector<uint64_t>* bits) {
  return Check("BitwiseAnd");
}

Status SingleRankCommunicator::BitwiseOr(std::vector<uint64_t>* bits) { return Check("BitwiseOr"); }

Status SingleRankCommunicator::Barrier() { return Check("Barrier"); }

Status SingleRankCommunicator::Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) {
  return Check("Allreduce");
}

Status SingleRankCommunicator::Allgatherv(const void* in, void* out,
                                          const std::vector<int64_t>& bytes_per_rank) {
  HVD_RETURN_IF_ERROR(Check("Allgatherv"));
  if (bytes_per_rank.at(0) > 0 && in != out) std::memmove(out, in, bytes_per_rank[0]);
  return Status::OK();
}

Status SingleRankCommunicator::Broadcast(void* buffer, int64_t bytes, int root) {
  return Check("Broadcast");
}

Status SingleRankCommunicator::Alltoallv(const void* in, const std::vector<int64_t>& send_bytes,
                                         void* out, const std::vector<int64_t>& recv_bytes) {
  HVD_RETURN_IF_ERROR(Check("Alltoallv"));
  if (send_bytes.at(0) > 0 && in != out) std::memmove(out, in, send_bytes[0]);
  return Status::OK();
}

Status SingleRankCommunicator::ReduceScatter(const void* in, void* out,
                                             const std::vector<int64_t>& counts_per_rank,
                                             DataType dtype, ReduceOp op) {
  HVD_RETURN_IF_ERROR(Check("ReduceScatter"));
  int64_t bytes = counts_per_rank.at(0) * static_cast<int64_t>(DataTypeSize(dtype));
  if (bytes > 0 && in != out) std::memmove(out, in, bytes);
  return Status::OK();
}

}  // namespace hvd::runtime
