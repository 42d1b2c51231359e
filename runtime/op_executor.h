#ifndef HVD_RUNTIME_OP_EXECUTOR_H_
#define HVD_RUNTIME_OP_EXECUTOR_H_

#include <optional>
#include <vector>

#include "common/status.h"
#include "runtime/communicator.h"
#include "runtime/fusion_buffer.h"
#include "runtime/handle_manager.h"
#include "runtime/message.h"
#include "runtime/tensor_queue.h"

namespace hvd::runtime {

// OpExecutor runs one negotiated (possibly fused) response on a process set's communicator
// and completes the local entries' handles. `entries[i]` belongs to response.names[i]; it is
// empty on a rank that has joined (it then contributes zeros to allreduce). Allreduce
// Average is Sum followed by a 1/size post-scale; fused allreduces are staged through the
// persistent FusionBuffer. Runtime-allocated outputs are malloc'ed and handed to the handle.
//
// A non-OK return means the communicator failed (peer died, timeout, abort): the caller must
// fail the entries and stop. Errors that concern only these tensors complete their handles
// and return OK. Background thread only.
class OpExecutor {
 public:
  OpExecutor(FusionBuffer* buffer, HandleManager* handles) : buffer_(buffer), handles_(handles) {}

  Status Execute(const Response& response, std::vector<std::optional<TensorEntry>>& entries,
                 Communicator* comm);

 private:
  Status Allreduce(const Response& r, std::vector<std::optional<TensorEntry>>& entries,
                   Communicator* comm);
  Status Broadcast(const Response& r, std::optional<TensorEntry>& entry, Communicator* comm);
  Status Allgather(const Response& r, std::optional<TensorEntry>& entry, Communicator* comm);
  Status Alltoall(const Response& r, std::optional<TensorEntry>& entry, Communicator* comm);
  Status Reducescatter(const Response& r, std::optional<TensorEntry>& entry, Communicator* comm);
  void Finish(std::vector<std::optional<TensorEntry>>& entries, const Status& status);

  FusionBuffer* buffer_;
  HandleManager* handles_;
};

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_OP_EXECUTOR_H_
