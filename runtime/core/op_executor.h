#ifndef HVD_RUNTIME_CORE_OP_EXECUTOR_H_
#define HVD_RUNTIME_CORE_OP_EXECUTOR_H_

#include <span>
#include <vector>

#include "common/status.h"
#include "runtime/core/fusion_buffer.h"
#include "runtime/core/handle_manager.h"
#include "runtime/core/message.h"
#include "runtime/core/runtime_timeline.h"
#include "runtime/core/tensor_queue.h"
#include "runtime/transports/communicator.h"

namespace hvd::runtime {

// OpExecutor runs one negotiated (possibly fused) response on a process set's communicator
// and sets `*outcome` to the status the local entries' handles complete with; the caller
// completes them (after recycling the entries, so a woken caller's next enqueue finds them
// free). Outputs are attached to the handles here. `entries[i]` belongs to response.names[i]; it is
// null on a rank that has joined (it then contributes zeros to allreduce). Allreduce
// Average is Sum followed by a 1/size post-scale; fused allreduces are staged through the
// persistent FusionBuffer. A fused allgather is one Allgatherv over the FusionBuffer: every
// rank packs its members' rows into its block, and each member's rows of every rank (in rank
// order) are copied out into that member's own output. Runtime-allocated outputs are
// malloc'ed and handed to the handle.
//
// Timeline (when `timeline` is non-null and on): each tensor of the response gets an <OP> span
// holding the activities (ALLOCATE_OUTPUT, MEMCPY_IN_FUSION_BUFFER, <COMM>_<OP> e.g.
// GLOO_ALLREDUCE, MEMCPY_OUT_FUSION_BUFFER) and an End with dtype, shape and bytes. Checked once
// per response; nothing is built when off.
//
// A non-OK return (also in *outcome) means the communicator failed (peer died, timeout,
// abort): the caller must fail the entries and stop. Errors that concern only these tensors
// (an error response) are only in *outcome; the return is OK. Background thread only.
class OpExecutor {
 public:
  OpExecutor(FusionBuffer* buffer, HandleManager* handles, RuntimeTimeline* timeline = nullptr)
      : buffer_(buffer), handles_(handles), timeline_(timeline) {}

  Status Execute(const Response& response, std::span<TensorEntry* const> entries,
                 Communicator* comm, Status* outcome);

 private:
  Status Allreduce(const Response& r, std::span<TensorEntry* const> entries, Communicator* comm);
  Status Broadcast(const Response& r, TensorEntry* entry, Communicator* comm);
  Status Allgather(const Response& r, TensorEntry* entry, Communicator* comm);
  Status FusedAllgather(const Response& r, std::span<TensorEntry* const> entries,
                        Communicator* comm);
  Status Alltoall(const Response& r, TensorEntry* entry, Communicator* comm);
  Status Reducescatter(const Response& r, TensorEntry* entry, Communicator* comm);
  // Timeline helpers; no-ops unless recording_ (set per response by Execute).
  void ActivityStart(const Response& r, std::string_view activity);
  void ActivityEnd(const Response& r);
  void RecordEnd(const Response& r, std::span<TensorEntry* const> entries);
  std::string CommActivity(const Response& r, const Communicator* comm) const;

  FusionBuffer* buffer_;
  HandleManager* handles_;
  RuntimeTimeline* timeline_;  // null unless this is global rank 0
  bool recording_ = false;
  // FusedAllgather's per-rank block bytes and unpack cursors, kept so it allocates nothing
  // but the outputs.
  std::vector<int64_t> block_bytes_, cursor_;
  std::vector<char*> outputs_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_OP_EXECUTOR_H_
