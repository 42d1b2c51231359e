#ifndef HVD_RUNTIME_CORE_NEGOTIATION_MESSAGE_H_
#define HVD_RUNTIME_CORE_NEGOTIATION_MESSAGE_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/status.h"
#include "runtime/core/reuse_vector.h"
#include "runtime/transports/data_type.h"

// The coordinator's wire messages: each rank sends a RequestList to the set's rank 0, which
// answers every member with one ResponseList. The encoding is a flat little-endian byte
// layout (see message.cc) with a version byte; decoding checks every length against the
// input and returns InvalidArgument for anything malformed. Plain values; not synchronized.
namespace hvd::runtime {

enum class OpType : int32_t {
  kAllreduce = 0,
  kAllgather = 1,
  kBroadcast = 2,
  kAlltoall = 3,
  kReducescatter = 4,
  kBarrier = 5,
  kJoin = 6,
  kProcessSetAdd = 7,
  kProcessSetRemove = 8,
  kError = 9,
};
constexpr int32_t kMaxOpType = 9;

// "allreduce", "allgather", ... as in Horovod's messages.
const char* OpTypeName(OpType type);

// One rank's request to run a collective on a named tensor.
struct Request {
  int32_t rank = 0;  // requesting rank within the process set
  OpType type = OpType::kAllreduce;
  std::string name;
  DataType dtype = DataType::kFloat32;
  std::vector<int64_t> shape;
  int32_t root = 0;  // broadcast: root's rank within the set
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t device = -1;
  std::string group;          // grouped ops: the group's name; "" = not grouped
  int32_t group_size = 0;     // members of `group`
  std::vector<int64_t> args;  // alltoall: splits; process-set add: ranks; remove: {id}

  int64_t NumElements() const;
  // Back to the defaults above, keeping the strings' and vectors' buffers for reuse.
  void Clear();
};

// Rank 0's decision for one tensor (or, after fusion, several allreduced or allgathered
// together).
struct Response {
  OpType type = OpType::kAllreduce;
  ReuseVector<std::string> names;  // keeps its strings' buffers when refilled (reuse_vector.h)
  std::string error;               // kError only
  DataType dtype = DataType::kFloat32;
  ReduceOp reduce_op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  int32_t root = 0;
  int32_t device = -1;
  std::string group;
  // allreduce/broadcast/reducescatter/alltoall: element count per name; allgather: dim 0 of
  // each member (names.size() * set size, name-major); process-set add: the ranks.
  std::vector<int64_t> sizes;
  // allgather: elements of one row (the product of dims 1..n, the same on every rank) per
  // name, so a fused allgather's bytes are known without the tensors; empty for other ops.
  std::vector<int64_t> row_elements;
  // alltoall: when no member gave splits (each sends dim 0 / set size rows to every member),
  // dim 0 of each member's tensor, so every member knows the rows it receives without
  // exchanging splits first; empty when any member gave splits. Valid on a cache hit too:
  // whether splits were given is part of the cached parameters (SameParams).
  std::vector<int64_t> even_alltoall_rows;
  int32_t last_joined_rank = -1;  // join
};

// The most elements a tensor of a request or response may have, 2^59: its byte count (at most 8
// bytes an element) and a few such sums stay within int64. Lists that cross hosts are checked
// against it before any size is computed from them (ConstructResponse, CheckResponseList).
inline constexpr int64_t kMaxTensorElements = int64_t{1} << 59;

// The first of `counts` (each of `each` >= 0 elements) that is negative or brings their total
// past kMaxTensorElements, counted in items or in elements; -1 when every one fits. What a
// response's sizes and an alltoall's row counts, exchanged between members, are checked with.
int FirstCountBeyond(std::span<const int64_t> counts, int64_t each);

struct RequestList {
  std::vector<Request> requests;
  bool shutdown = false;
  // With `shutdown`: why, when it is not the member's own hvd_shutdown (empty otherwise).
  std::string shutdown_reason;
};

struct ResponseList {
  std::vector<Response> responses;
  bool shutdown = false;
  std::string shutdown_reason;
  // The members whose request list asked to shut down (positions in the set), so a bystander's
  // error can name who stopped the job.
  std::vector<int32_t> shutdown_ranks;
};

std::string EncodeRequestList(const RequestList& list);
Result<RequestList> DecodeRequestList(const std::string& bytes);
std::string EncodeResponseList(const ResponseList& list);
Result<ResponseList> DecodeResponseList(const std::string& bytes);

// Whether every response of `list` has the shape the members' executors read it in, for a set
// of `set_size` members: names; sizes per name (an allgather's per name and member) and its row
// sizes, none negative and their byte counts within int64; a broadcast root and a joined rank
// within the set. What rank 0 makes always passes; a list that crossed hosts on an
// unauthenticated data connection may not (docs/threat-model.md). InvalidArgument naming the
// response otherwise.
Status CheckResponseList(const ResponseList& list, int set_size);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_CORE_NEGOTIATION_MESSAGE_H_
