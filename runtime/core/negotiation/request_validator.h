#ifndef HVD_RUNTIME_CORE_NEGOTIATION_REQUEST_VALIDATOR_H_
#define HVD_RUNTIME_CORE_NEGOTIATION_REQUEST_VALIDATOR_H_

#include <vector>

#include "runtime/core/negotiation/message.h"

namespace hvd::runtime {

// Builds rank 0's response for one tensor from the requests of every rank that submitted it
// (Horovod's checks): mismatched op type, dtype, shape (full shape for allreduce/broadcast/
// reducescatter; rank and non-first dims for allgather/alltoall), 0-d tensors where a first
// dimension is needed, device, root rank, scale factors or reduce op yield a kError response
// whose message follows Horovod's wording. `any_joined` forbids ops that cannot run while a
// rank has joined. `set_size` is the number of members. An allgather response carries every
// rank's dim 0 in `sizes` and the elements of one row in `row_elements`. Pure function.
// A request that no rank of this build sends (a negative dimension, more than
// kMaxTensorElements (message.h) elements, a broadcast root or alltoall splits that do not fit the
// set, a process-set change without its argument, a group of no members) yields a kError response
// naming the rank and what is wrong, before any size is computed from it.
// `global_ranks`: the set's members' global ranks, which errors name a broadcast root by (empty:
// positions in the set, as sent).
Response ConstructResponse(const std::vector<Request>& requests, bool any_joined, int set_size,
                           const std::vector<int32_t>& global_ranks = {});

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_NEGOTIATION_REQUEST_VALIDATOR_H_
