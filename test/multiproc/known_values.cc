#include "test/multiproc/known_values.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

#include "runtime/transports/reduction.h"

namespace hvd::test {

using runtime::DataType;
using runtime::ReduceOp;

double Value(DataType dtype, int rank, size_t i) {
  if (dtype == DataType::kBool) return static_cast<double>((rank + i) % 2);
  return static_cast<double>((rank + i) % 3 + 1);
}

double Combine(DataType dtype, ReduceOp op, double a, double b) {
  if (dtype == DataType::kBool) {
    const bool x = a != 0, y = b != 0;
    return (op == ReduceOp::kMin || op == ReduceOp::kProduct) ? (x && y) : (x || y);
  }
  switch (op) {
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
    case ReduceOp::kProduct:
      return a * b;
    default:
      return a + b;
  }
}

void Store(DataType dtype, void* base, size_t i, double v) {
  switch (dtype) {
    case DataType::kUInt8:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v);
      break;
    case DataType::kBool:
      static_cast<uint8_t*>(base)[i] = static_cast<uint8_t>(v);
      break;
    case DataType::kInt8:
      static_cast<int8_t*>(base)[i] = static_cast<int8_t>(v);
      break;
    case DataType::kUInt16:
      static_cast<uint16_t*>(base)[i] = static_cast<uint16_t>(v);
      break;
    case DataType::kInt16:
      static_cast<int16_t*>(base)[i] = static_cast<int16_t>(v);
      break;
    case DataType::kInt32:
      static_cast<int32_t*>(base)[i] = static_cast<int32_t>(v);
      break;
    case DataType::kInt64:
      static_cast<int64_t*>(base)[i] = static_cast<int64_t>(v);
      break;
    case DataType::kFloat16:
      static_cast<uint16_t*>(base)[i] = runtime::FloatToHalf(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(base)[i] = runtime::FloatToBFloat16(static_cast<float>(v));
      break;
    case DataType::kFloat32:
      static_cast<float*>(base)[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      static_cast<double*>(base)[i] = v;
      break;
  }
}

double Load(DataType dtype, const void* base, size_t i) {
  switch (dtype) {
    case DataType::kUInt8:
      return static_cast<const uint8_t*>(base)[i];
    case DataType::kBool:
      return static_cast<const uint8_t*>(base)[i];
    case DataType::kInt8:
      return static_cast<const int8_t*>(base)[i];
    case DataType::kUInt16:
      return static_cast<const uint16_t*>(base)[i];
    case DataType::kInt16:
      return static_cast<const int16_t*>(base)[i];
    case DataType::kInt32:
      return static_cast<const int32_t*>(base)[i];
    case DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(base)[i]);
    case DataType::kFloat16:
      return runtime::HalfToFloat(static_cast<const uint16_t*>(base)[i]);
    case DataType::kBFloat16:
      return runtime::BFloat16ToFloat(static_cast<const uint16_t*>(base)[i]);
    case DataType::kFloat32:
      return static_cast<const float*>(base)[i];
    case DataType::kFloat64:
      return static_cast<const double*>(base)[i];
  }
  return 0;
}

double Expected(DataType dtype, ReduceOp op, int size, size_t i) {
  double acc = Value(dtype, 0, i);
  for (int r = 1; r < size; ++r) acc = Combine(dtype, op, acc, Value(dtype, r, i));
  return acc;
}

int CheckAllreduceKnownValues(runtime::Communicator& comm, std::initializer_list<size_t> counts,
                              std::initializer_list<ReduceOp> ops) {
  for (size_t count : counts) {
    for (DataType dtype : kAllTypes) {
      std::vector<char> buf(count * runtime::DataTypeSize(dtype));
      for (ReduceOp op : ops) {
        for (size_t i = 0; i < count; ++i)
          Store(dtype, buf.data(), i, Value(dtype, comm.rank(), i));
        Status st = comm.Allreduce(buf.data(), static_cast<int64_t>(count), dtype, op);
        if (!st.ok()) {
          std::fprintf(stderr, "allreduce %s %s count %zu: %s\n", runtime::DataTypeName(dtype),
                       runtime::ReduceOpName(op), count, st.ToString().c_str());
          return 1;
        }
        for (size_t i = 0; i < count; ++i) {
          const double want = Expected(dtype, op, comm.size(), i);
          const double got = Load(dtype, buf.data(), i);
          if (got != want) {
            std::fprintf(stderr, "allreduce %s %s count %zu element %zu: got %g want %g\n",
                         runtime::DataTypeName(dtype), runtime::ReduceOpName(op), count, i, got,
                         want);
            return 1;
          }
        }
      }
    }
  }
  return 0;
}

}  // namespace hvd::test
