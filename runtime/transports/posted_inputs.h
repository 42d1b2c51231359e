#ifndef HVD_RUNTIME_TRANSPORTS_POSTED_INPUTS_H_
#define HVD_RUNTIME_TRANSPORTS_POSTED_INPUTS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// Where a transport keeps what its BitwiseAndPostingInput (or BitwiseAndPostingPieces) left
// readable (shared memory: each member's half of the held round; TCP: the gathered blocks): for
// each member, an 8-byte length, then that many bytes of its input from block_offset() on.
class PostedSource {
 public:
  virtual ~PostedSource() = default;
  // False once any other call on the transport's communicator ended the posting round.
  virtual bool open() const = 0;
  // Member k's block: its length word, then its input.
  virtual const char* block(int k) const = 0;
  // Where every block's bytes start in their member's input: 0 where whole inputs were posted,
  // the offset of this member's piece where pieces were (Communicator::BitwiseAndPostingPieces).
  virtual size_t block_offset() const { return 0; }
  // Whether an allreduce of `bytes` (the same on every member) costs less finished in one round
  // of the transport's own (AllreduceSliced) than with every member reducing all N posted inputs
  // (shared memory past its direct size).
  virtual bool slices_allreduce(int64_t bytes) const {
    (void)bytes;
    return false;
  }
  // That round: every member reduces its slice of every posted input (`count` elements each,
  // which the caller checked were posted) and scales it (`scale`, as
  // Communicator::AllreduceScaled), then the slices are exchanged; ends the posting round.
  virtual Status AllreduceSliced(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                                 double scale) {
    (void)buffer, (void)count, (void)dtype, (void)op, (void)scale;
    return Status::Internal("this transport does not slice a posted allreduce");
  }
  virtual void Abort() = 0;
};

// The communicator Communicator::posted_inputs() returns (communicator.h): its single-tensor
// collectives compute this member's result from every member's posted input, without a round
// (but an allreduce the source slices, PostedSource::slices_allreduce: one), in the same rank
// order as the transports' own small collectives (allreduce and reduce-scatter reduce member 0's
// input, then 1's, ...; float16/bfloat16 sums and products accumulated in float, as shared
// memory's). A member that posted less than a call needs is
// kInternal naming both sizes: the members disagreed on what was posted, which the controller's
// shared state rules out. `name` is the timeline's ("SHM_EAGER": SHM_EAGER_ALLGATHER), `prefix`
// the transport's in messages ("shm").
class PostedInputs final : public Communicator {
 public:
  PostedInputs(const char* name, const char* prefix, int rank, int size, PostedSource* source)
      : name_(name), prefix_(prefix), rank_(rank), size_(size), source_(source) {}

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* name() const override { return name_; }

  Status GatherBytes(const std::string&, int, std::vector<std::string>*) override {
    return Refuse("gather");
  }
  Status BroadcastBytes(std::string*, int) override { return Refuse("broadcast of bytes"); }
  Status BitwiseAnd(std::vector<uint64_t>*) override { return Refuse("bitwise and"); }
  Status BitwiseOr(std::vector<uint64_t>*) override { return Refuse("bitwise or"); }
  Status Barrier() override { return Refuse("barrier"); }
  Status Alltoallv(const void*, const std::vector<int64_t>&, void*,
                   const std::vector<int64_t>&) override {
    return Refuse("alltoall with splits");
  }
  Status Allreduce(void* buffer, int64_t count, DataType dtype, ReduceOp op) override {
    return AllreduceScaled(buffer, count, dtype, op, 1.0);
  }
  // The scale applied as the rounds' reducers apply it (ReduceHeldInputs: float16/bfloat16
  // sums in float before their one rounding), so an eager Average has the bits of one that ran
  // its own rounds.
  Status AllreduceScaled(void* buffer, int64_t count, DataType dtype, ReduceOp op,
                         double scale) override;
  Status Allgatherv(const void* in, void* out, const std::vector<int64_t>& bytes_per_rank) override;
  Status Broadcast(void* buffer, int64_t bytes, int root) override;
  // Member k sends recv_bytes[k] to every member: its piece for member j starts at
  // j * recv_bytes[k] of its input, which holds size() pieces.
  Status AlltoallvAgreed(const void* in, const std::vector<int64_t>& send_bytes, void* out,
                         const std::vector<int64_t>& recv_bytes, int64_t max_piece) override;
  Status ReduceScatter(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                       DataType dtype, ReduceOp op) override {
    return ReduceScatterScaled(in, out, counts_per_rank, dtype, op, 1.0);
  }
  // The scale applied as the reduction's (ReduceHeldInputs).
  Status ReduceScatterScaled(const void* in, void* out, const std::vector<int64_t>& counts_per_rank,
                             DataType dtype, ReduceOp op, double scale) override;
  void Abort() override { source_->Abort(); }

 private:
  std::string What(const char* op) const;
  Status Refuse(const char* op) const;
  // Member k's posted input, which must hold at least `need` bytes.
  Status Input(int k, size_t need, const char** data) const { return Range(k, 0, need, data); }
  // Bytes [offset, offset + bytes) of member k's input, which it must have posted.
  Status Range(int k, size_t offset, size_t bytes, const char** data) const;
  // Those bytes of every member's input (`count` elements) reduced in rank order into `out`
  // (ReduceHeldInputs).
  Status ReduceRanges(size_t offset, size_t bytes, void* out, int64_t count, DataType dtype,
                      ReduceOp op, double scale) const;

  const char* const name_;
  const char* const prefix_;
  const int rank_;
  const int size_;
  PostedSource* const source_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_POSTED_INPUTS_H_
