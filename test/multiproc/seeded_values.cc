#include "test/multiproc/seeded_values.h"

#include "runtime/transports/reduction.h"

namespace hvd::test {

using runtime::DataType;
using runtime::ReduceOp;

namespace {

// splitmix64's output function: a counter-based generator, so element i of an input is one hash
// of (case, rank, i). std::mt19937 with std::uniform_*_distribution spent 40 % of
// shm_multiproc_test's CPU generating these inputs (every member builds every member's input
// for its reference).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

}  // namespace

std::vector<char> Input(DataType dtype, int64_t count, int rank, uint32_t seed) {
  const uint64_t key = Mix((uint64_t{seed} << 32) | static_cast<uint32_t>(rank));
  const size_t elem = runtime::DataTypeSize(dtype);
  std::vector<char> out(static_cast<size_t>(count) * elem);
  for (int64_t i = 0; i < count; ++i) {
    char* p = out.data() + i * elem;
    const uint64_t h = Mix(key + static_cast<uint64_t>(i));
    const int s = static_cast<int>((h & 0x7ff) % 7) - 3;            // -3..3
    const double r = static_cast<double>(h >> 11) * 0x1p-51 - 2.0;  // [-2, 2), 53 random bits
    switch (dtype) {
      case DataType::kUInt8:
        *reinterpret_cast<uint8_t*>(p) = static_cast<uint8_t>(s + 3);
        break;
      case DataType::kInt8:
        *reinterpret_cast<int8_t*>(p) = static_cast<int8_t>(s);
        break;
      case DataType::kUInt16:
        *reinterpret_cast<uint16_t*>(p) = static_cast<uint16_t>(s + 3);
        break;
      case DataType::kInt16:
        *reinterpret_cast<int16_t*>(p) = static_cast<int16_t>(s);
        break;
      case DataType::kInt32:
        *reinterpret_cast<int32_t*>(p) = s;
        break;
      case DataType::kInt64:
        *reinterpret_cast<int64_t*>(p) = s;
        break;
      case DataType::kFloat16:
        *reinterpret_cast<uint16_t*>(p) = runtime::FloatToHalf(static_cast<float>(r));
        break;
      case DataType::kBFloat16:
        *reinterpret_cast<uint16_t*>(p) = runtime::FloatToBFloat16(static_cast<float>(r));
        break;
      case DataType::kFloat32:
        *reinterpret_cast<float*>(p) = static_cast<float>(r);
        break;
      case DataType::kFloat64:
        *reinterpret_cast<double*>(p) = r;
        break;
      case DataType::kBool:
        *reinterpret_cast<uint8_t*>(p) = s > 0 ? 1 : 0;
        break;
    }
  }
  return out;
}

std::vector<char> Expected(DataType dtype, ReduceOp op, int64_t count, int n, uint32_t seed) {
  return Expected(dtype, op, count, n, seed, 1.0);
}

std::vector<char> Expected(DataType dtype, ReduceOp op, int64_t count, int n, uint32_t seed,
                           double scale) {
  if (runtime::AccumulatesInFloat(dtype, op)) {
    // One element at a time through the scalar conversions: every input in float, in rank
    // order, rounded once (not the kernels under test).
    const bool bf16 = dtype == DataType::kBFloat16;
    std::vector<float> wide(static_cast<size_t>(count));
    for (int k = 0; k < n; ++k) {
      const std::vector<char> in = Input(dtype, count, k, seed);
      const auto* h = reinterpret_cast<const uint16_t*>(in.data());
      for (int64_t i = 0; i < count; ++i) {
        const float x = bf16 ? runtime::BFloat16ToFloat(h[i]) : runtime::HalfToFloat(h[i]);
        wide[i] = k == 0 ? x : op == ReduceOp::kProduct ? wide[i] * x : wide[i] + x;
      }
    }
    std::vector<char> out(static_cast<size_t>(count) * 2);
    auto* h = reinterpret_cast<uint16_t*>(out.data());
    const float f = static_cast<float>(scale);
    for (int64_t i = 0; i < count; ++i) {
      const float v = scale == 1.0 ? wide[i] : wide[i] * f;
      h[i] = bf16 ? runtime::FloatToBFloat16(v) : runtime::FloatToHalf(v);
    }
    return out;
  }
  std::vector<char> acc = Input(dtype, count, 0, seed);
  for (int k = 1; k < n; ++k) {
    std::vector<char> in = Input(dtype, count, k, seed);
    runtime::ReduceInto(acc.data(), in.data(), count, dtype, op);
  }
  runtime::ScaleBuffer(acc.data(), count, dtype, scale);
  return acc;
}

std::string Case(DataType dtype, ReduceOp op, int64_t count) {
  return std::string(runtime::DataTypeName(dtype)) + " " + runtime::ReduceOpName(op) + " x" +
         std::to_string(count);
}

}  // namespace hvd::test
