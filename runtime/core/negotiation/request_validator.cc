#include "runtime/core/negotiation/request_validator.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <sstream>

#include "common/check.h"

namespace hvd::runtime {
namespace {

std::string ShapeString(const std::vector<int64_t>& shape) {
  std::ostringstream s;
  s << "[";
  for (size_t i = 0; i < shape.size(); ++i) s << (i ? ", " : "") << shape[i];
  s << "]";
  return s.str();
}

std::string DeviceString(int32_t device) {
  return device < 0 ? "CPU" : "GPU " + std::to_string(device);
}

std::string Num(double v) {
  std::ostringstream s;
  s << v;
  return s.str();
}

// Returns "" when every request agrees on the op-independent fields.
std::string CheckCommon(const Request& first, const Request& r) {
  if (r.type != first.type) {
    return std::string("Mismatched operations: One rank did an ") + OpTypeName(first.type) +
           ", while another rank did an " + OpTypeName(r.type) + ".";
  }
  if (r.dtype != first.dtype) {
    return std::string("Mismatched data types: One rank had type ") + DataTypeName(first.dtype) +
           ", but another rank had type " + DataTypeName(r.dtype) + ".";
  }
  // CPU against GPU, as Horovod: each rank's GPU is its own (local_rank's) device.
  if ((r.device >= 0) != (first.device >= 0)) {
    return "Mismatched CPU/GPU device selection: One rank specified device " +
           DeviceString(first.device) + ", but another rank specified device " +
           DeviceString(r.device) + ".";
  }
  if (r.prescale != first.prescale) {
    return "Mismatched prescale factors: One rank sent factor " + Num(first.prescale) +
           ", but another rank sent factor " + Num(r.prescale) + ".";
  }
  if (r.postscale != first.postscale) {
    return "Mismatched postscale factors: One rank sent factor " + Num(first.postscale) +
           ", but another rank sent factor " + Num(r.postscale) + ".";
  }
  if (r.group_size != first.group_size) {
    return "Mismatched grouped operations: One rank submitted tensor '" + first.name +
           "' in a group of " + std::to_string(first.group_size) +
           " tensors, but another rank in a group of " + std::to_string(r.group_size) + ".";
  }
  return "";
}

std::string CheckShapes(const Request& first, const Request& r) {
  const char* op = OpTypeName(first.type);
  switch (first.type) {
    case OpType::kAllreduce:
    case OpType::kBroadcast:
    case OpType::kReducescatter:
      if (r.shape != first.shape) {
        return std::string("Mismatched ") + op +
               " tensor shapes: One rank sent a tensor of shape " + ShapeString(first.shape) +
               ", but another rank sent a tensor of shape " + ShapeString(r.shape) + ".";
      }
      return "";
    case OpType::kAllgather:
    case OpType::kAlltoall:
      if (r.shape.size() != first.shape.size()) {
        return std::string("Mismatched ") + op + " tensor shapes: One rank sent a tensor of rank " +
               std::to_string(first.shape.size()) + ", but another rank sent a tensor of rank " +
               std::to_string(r.shape.size()) + ".";
      }
      for (size_t d = 1; d < r.shape.size(); ++d) {
        if (r.shape[d] != first.shape[d]) {
          return std::string("Mismatched ") + op + " tensor shapes: One rank sent a tensor with " +
                 "dimension " + std::to_string(d) + " equal to " + std::to_string(first.shape[d]) +
                 ", but another rank sent a tensor with dimension " + std::to_string(d) +
                 " equal to " + std::to_string(r.shape[d]) + ".";
        }
      }
      return "";
    default:
      return "";
  }
}

// `global` names a set position (a broadcast root) by its global rank, as the user gave it.
std::string CheckOpSpecific(const Request& first, const Request& r,
                            const std::function<int32_t(int32_t)>& global) {
  // Every rank's add_process_set/remove_process_set go by one name, so that ranks asking for
  // different sets meet here with an error instead of waiting for each other's names forever.
  if (first.type == OpType::kProcessSetAdd && r.args != first.args) {
    return "Mismatched process sets: rank " + std::to_string(first.rank) +
           " added a process set of ranks " + ShapeString(first.args) + ", but rank " +
           std::to_string(r.rank) + " added " + ShapeString(r.args) +
           ". Every rank must add the same process sets in the same order.";
  }
  if (first.type == OpType::kProcessSetRemove && r.args != first.args) {
    return "Mismatched process sets: rank " + std::to_string(first.rank) + " removed process set " +
           std::to_string(first.args.at(0)) + ", but rank " + std::to_string(r.rank) + " removed " +
           std::to_string(r.args.at(0)) +
           ". Every rank must remove the same process sets in the same order.";
  }
  if (first.type == OpType::kBroadcast && r.root != first.root) {
    return "Mismatched broadcast root ranks: One rank specified root rank " +
           std::to_string(global(first.root)) + ", but another rank specified root rank " +
           std::to_string(global(r.root)) + ".";
  }
  if ((first.type == OpType::kAllreduce || first.type == OpType::kReducescatter) &&
      r.reduce_op != first.reduce_op) {
    return std::string("Mismatched reduction operations: One rank requested ") +
           ReduceOpName(first.reduce_op) + ", but another rank requested " +
           ReduceOpName(r.reduce_op) + ".";
  }
  return "";
}

std::string CheckJoinAndRank(const Request& first, bool any_joined) {
  const bool needs_dim0 = first.type == OpType::kAllgather || first.type == OpType::kAlltoall ||
                          first.type == OpType::kReducescatter;
  if (needs_dim0 && first.shape.empty()) {
    return std::string("Rank zero tried to ") + OpTypeName(first.type) + " a rank-zero tensor.";
  }
  if (!any_joined) return "";
  switch (first.type) {
    case OpType::kAllgather:
      return "Allgather is not supported with Join at this time. Specify sparse_to_dense=True if "
             "using DistributedOptimizer";
    case OpType::kBroadcast:
      return "Broadcast is not supported with Join at this time.";
    case OpType::kAlltoall:
      return "Alltoall is not supported with Join at this time.";
    case OpType::kReducescatter:
      return "Reducescatter is not supported with Join at this time.";
    default:
      return "";
  }
}

// "" when `r` could have come from a rank of this build: a request list arrives from another
// process, across hosts on a data connection that nothing authenticates past the TCP
// transport's handshake (docs/threat-model.md), so rank 0 checks what the ranks' own call-time
// checks guarantee before it computes sizes from it.
std::string CheckWellFormed(const Request& r, int set_size) {
  if (r.type == OpType::kError) return "an error is not a request";
  // The product of the nonzero dimensions bounds every partial product, in any order
  // (Request::NumElements, an allgather's row), so none of them overflows.
  int64_t nonzero = 1;
  for (int64_t dim : r.shape) {
    if (dim < 0) return "shape " + ShapeString(r.shape) + " has a negative dimension";
    if (dim > 0 &&
        (__builtin_mul_overflow(nonzero, dim, &nonzero) || nonzero > kMaxTensorElements)) {
      return "shape " + ShapeString(r.shape) + " has too many elements";
    }
  }
  if (r.type == OpType::kBroadcast && (r.root < 0 || r.root >= set_size)) {
    return "broadcast root rank " + std::to_string(r.root) + " is not a rank of a set of " +
           std::to_string(set_size);
  }
  if (r.type == OpType::kAlltoall && !r.args.empty()) {
    if (static_cast<int64_t>(r.args.size()) != set_size ||
        std::any_of(r.args.begin(), r.args.end(), [](int64_t s) { return s < 0; })) {
      return "alltoall splits " + ShapeString(r.args) + " are not one count per member of " +
             std::to_string(set_size);
    }
  }
  if (r.type == OpType::kProcessSetAdd &&
      (r.args.empty() || std::any_of(r.args.begin(), r.args.end(),
                                     [&](int64_t rank) { return rank < 0 || rank >= set_size; }))) {
    return "process set of ranks " + ShapeString(r.args) + " is not ranks of a set of " +
           std::to_string(set_size);
  }
  if (r.type == OpType::kProcessSetRemove &&
      (r.args.size() != 1 || r.args[0] < 0 || r.args[0] > INT32_MAX)) {
    return "process set removal of " + ShapeString(r.args) + " is not one set id";
  }
  if (!r.group.empty() && r.group_size < 1) {
    return "group '" + r.group + "' of " + std::to_string(r.group_size) + " members";
  }
  return "";
}

// An allgather's output, every member's rows together, within kMaxTensorElements (each
// member's tensor is; their sum may not be). Its shapes are well formed and agree past dim 0.
std::string CheckGatheredSize(const std::vector<Request>& requests) {
  const Request& first = requests.front();
  int64_t rows = 0, row = 1, elements = 0;
  for (size_t d = 1; d < first.shape.size(); ++d) row *= first.shape[d];
  bool fits = true;
  for (const Request& r : requests) fits = fits && !__builtin_add_overflow(rows, r.shape[0], &rows);
  fits = fits && !__builtin_mul_overflow(rows, row, &elements) && elements <= kMaxTensorElements;
  return fits ? "" : "Allgather of '" + first.name + "' gathers more than 2^59 elements.";
}

Response Fill(const std::vector<Request>& requests, int set_size) {
  const Request& first = requests.front();
  Response resp;
  resp.type = first.type;
  resp.names = {first.name};
  resp.dtype = first.dtype;
  resp.reduce_op = first.reduce_op;
  resp.prescale = first.prescale;
  resp.postscale = first.postscale;
  resp.root = first.root;
  resp.device = first.device;
  resp.group = first.group;
  if (first.type == OpType::kAllgather) {
    resp.sizes.assign(set_size, 0);
    for (const Request& r : requests) resp.sizes[r.rank] = r.shape.empty() ? 0 : r.shape[0];
    int64_t row = 1;  // dims 1..n agree on every rank (CheckShapes)
    for (size_t d = 1; d < first.shape.size(); ++d) row *= first.shape[d];
    resp.row_elements = {row};
  } else if (first.type == OpType::kProcessSetAdd || first.type == OpType::kProcessSetRemove) {
    resp.sizes = first.args;
  } else {
    resp.sizes = {first.NumElements()};
  }
  const bool even = std::all_of(requests.begin(), requests.end(),
                                [](const Request& r) { return r.args.empty(); });
  if (first.type == OpType::kAlltoall && even) {
    resp.even_alltoall_rows.assign(set_size, 0);
    for (const Request& r : requests) resp.even_alltoall_rows[r.rank] = r.shape.at(0);
  }
  return resp;
}

}  // namespace

Response ConstructResponse(const std::vector<Request>& requests, bool any_joined, int set_size,
                           const std::vector<int32_t>& global_ranks) {
  HVD_CHECK(!requests.empty());
  // Until 2026-12-01 a process set's mismatched roots were printed as positions in the set.
  const auto global = [&](int32_t position) {
    return position >= 0 && static_cast<size_t>(position) < global_ranks.size()
               ? global_ranks[static_cast<size_t>(position)]
               : position;
  };
  const Request& first = requests.front();
  std::string error;
  for (const Request& r : requests) {
    error = CheckWellFormed(r, set_size);
    if (!error.empty()) {
      error = "Malformed request from rank " + std::to_string(r.rank) + " for tensor '" + r.name +
              "': " + error + ".";
      break;
    }
  }
  if (error.empty()) error = CheckJoinAndRank(first, any_joined);
  for (size_t i = 1; i < requests.size() && error.empty(); ++i) {
    error = CheckCommon(first, requests[i]);
    if (error.empty()) error = CheckShapes(first, requests[i]);
    if (error.empty()) error = CheckOpSpecific(first, requests[i], global);
  }
  if (error.empty() && first.type == OpType::kAllgather) error = CheckGatheredSize(requests);
  if (error.empty()) return Fill(requests, set_size);
  Response resp;
  resp.type = OpType::kError;
  resp.names = {first.name};
  resp.error = error;
  resp.group = first.group;
  return resp;
}

}  // namespace hvd::runtime
