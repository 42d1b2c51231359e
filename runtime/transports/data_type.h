#ifndef HVD_RUNTIME_TRANSPORTS_DATA_TYPE_H_
#define HVD_RUNTIME_TRANSPORTS_DATA_TYPE_H_

#include <cstddef>
#include <cstdint>

namespace hvd::runtime {

// Values equal hvd_dtype_t / hvd_reduce_op_t in runtime/include/hvd/c_api.h.
enum class DataType : int32_t {
  kUInt8 = 0,
  kInt8 = 1,
  kUInt16 = 2,
  kInt16 = 3,
  kInt32 = 4,
  kInt64 = 5,
  kFloat16 = 6,
  kFloat32 = 7,
  kFloat64 = 8,
  kBool = 9,
  kBFloat16 = 10,
};

enum class ReduceOp : int32_t {
  kAverage = 0,
  kSum = 1,
  kAdasum = 2,
  kMin = 3,
  kMax = 4,
  kProduct = 5,
};

size_t DataTypeSize(DataType dtype);
const char* DataTypeName(DataType dtype);  // "float32", ...
const char* ReduceOpName(ReduceOp op);     // "Sum", ...

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_DATA_TYPE_H_
