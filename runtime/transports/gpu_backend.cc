#include "runtime/transports/gpu_backend.h"

namespace hvd::runtime {

bool NcclReduces(DataType dtype, ReduceOp op, bool scaled, int members, bool scale_kernel) {
  switch (dtype) {
    case DataType::kUInt8:
    case DataType::kInt8:
    case DataType::kInt32:
    case DataType::kInt64:
    case DataType::kFloat16:
    case DataType::kFloat32:
    case DataType::kFloat64:
    case DataType::kBFloat16:
      break;
    default:
      return false;  // int16, uint16 and bool have no NCCL type
  }
  const bool is_float = dtype == DataType::kFloat16 || dtype == DataType::kFloat32 ||
                        dtype == DataType::kFloat64 || dtype == DataType::kBFloat16;
  switch (op) {
    case ReduceOp::kSum:
      return !scaled || (is_float && (members > 1 || scale_kernel));
    case ReduceOp::kMin:
    case ReduceOp::kMax:
    case ReduceOp::kProduct:
      return !scaled;
    default:
      return false;  // Average is Sum then a scale (the caller passes kSum); Adasum is not NCCL's
  }
}

}  // namespace hvd::runtime
