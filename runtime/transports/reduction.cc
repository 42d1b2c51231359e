#include "runtime/transports/reduction.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "common/check.h"

namespace hvd::runtime {
namespace {

template <typename T>
T Combine(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
    case ReduceOp::kProduct:
      return static_cast<T>(a * b);
    default:
      return static_cast<T>(a + b);
  }
}

template <typename T>
void ReduceTyped(void* dst, const void* src, int64_t count, ReduceOp op) {
  T* d = static_cast<T*>(dst);
  const T* s = static_cast<const T*>(src);
  for (int64_t i = 0; i < count; ++i) d[i] = Combine<T>(d[i], s[i], op);
}

void ReduceBool(void* dst, const void* src, int64_t count, ReduceOp op) {
  uint8_t* d = static_cast<uint8_t*>(dst);
  const uint8_t* s = static_cast<const uint8_t*>(src);
  bool conj = op == ReduceOp::kProduct || op == ReduceOp::kMin;
  for (int64_t i = 0; i < count; ++i) {
    bool a = d[i] != 0, b = s[i] != 0;
    d[i] = conj ? (a && b) : (a || b);
  }
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Reduce16(void* dst, const void* src, int64_t count, ReduceOp op) {
  uint16_t* d = static_cast<uint16_t*>(dst);
  const uint16_t* s = static_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < count; ++i)
    d[i] = FromFloat(Combine<float>(ToFloat(d[i]), ToFloat(s[i]), op));
}

template <typename T>
void ScaleTyped(void* buffer, int64_t count, double factor) {
  T* b = static_cast<T*>(buffer);
  for (int64_t i = 0; i < count; ++i) b[i] = static_cast<T>(static_cast<double>(b[i]) * factor);
}

// float32 scales in float32 by the factor rounded to float, as Horovod (and torch's
// `tensor * factor`) do; the float64 product rounded once differs in the last bit.
void ScaleFloat(void* buffer, int64_t count, double factor) {
  float* b = static_cast<float*>(buffer);
  const float f = static_cast<float>(factor);
  for (int64_t i = 0; i < count; ++i) b[i] *= f;
}

template <float (*ToFloat)(uint16_t), uint16_t (*FromFloat)(float)>
void Scale16(void* buffer, int64_t count, double factor) {
  uint16_t* b = static_cast<uint16_t*>(buffer);
  float f = static_cast<float>(factor);
  for (int64_t i = 0; i < count; ++i) b[i] = FromFloat(ToFloat(b[i]) * f);
}

}  // namespace

float HalfToFloat(uint16_t h) {
  uint32_t sign = (h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      exp = 127 - 15 + 1;
      while ((mant & 0x400u) == 0) {
        mant <<= 1;
        --exp;
      }
      bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t exp = (x >> 23) & 0xff;
  uint32_t mant = x & 0x7fffffu;
  if (exp == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0));
  int32_t e = static_cast<int32_t>(exp) - 127 + 15;
  if (e >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (e <= 0) {
    if (e < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    uint32_t shift = static_cast<uint32_t>(14 - e);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(e) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;  // may carry into exp: fine
  return static_cast<uint16_t>(half);
}

float BFloat16ToFloat(uint16_t b) {
  uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  if (std::isnan(f)) return static_cast<uint16_t>((x >> 16) | 0x40u);
  uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);  // round to nearest even
  return static_cast<uint16_t>((x + rounding) >> 16);
}

void ReduceInto(void* dst, const void* src, int64_t count, DataType dtype, ReduceOp op) {
  HVD_CHECK(op != ReduceOp::kAdasum) << "Adasum is not an elementwise reduction";
  switch (dtype) {
    case DataType::kUInt8:
      return ReduceTyped<uint8_t>(dst, src, count, op);
    case DataType::kInt8:
      return ReduceTyped<int8_t>(dst, src, count, op);
    case DataType::kUInt16:
      return ReduceTyped<uint16_t>(dst, src, count, op);
    case DataType::kInt16:
      return ReduceTyped<int16_t>(dst, src, count, op);
    case DataType::kInt32:
      return ReduceTyped<int32_t>(dst, src, count, op);
    case DataType::kInt64:
      return ReduceTyped<int64_t>(dst, src, count, op);
    case DataType::kFloat32:
      return ReduceTyped<float>(dst, src, count, op);
    case DataType::kFloat64:
      return ReduceTyped<double>(dst, src, count, op);
    case DataType::kBool:
      return ReduceBool(dst, src, count, op);
    case DataType::kFloat16:
      return Reduce16<HalfToFloat, FloatToHalf>(dst, src, count, op);
    case DataType::kBFloat16:
      return Reduce16<BFloat16ToFloat, FloatToBFloat16>(dst, src, count, op);
  }
}

void ScaleBuffer(void* buffer, int64_t count, DataType dtype, double factor) {
  if (factor == 1.0) return;
  switch (dtype) {
    case DataType::kUInt8:
      return ScaleTyped<uint8_t>(buffer, count, factor);
    case DataType::kInt8:
      return ScaleTyped<int8_t>(buffer, count, factor);
    case DataType::kUInt16:
      return ScaleTyped<uint16_t>(buffer, count, factor);
    case DataType::kInt16:
      return ScaleTyped<int16_t>(buffer, count, factor);
    case DataType::kInt32:
      return ScaleTyped<int32_t>(buffer, count, factor);
    case DataType::kInt64:
      return ScaleTyped<int64_t>(buffer, count, factor);
    case DataType::kFloat32:
      return ScaleFloat(buffer, count, factor);
    case DataType::kFloat64:
      return ScaleTyped<double>(buffer, count, factor);
    case DataType::kBool:
      return;  // scaling a boolean is meaningless; Horovod rejects it
    case DataType::kFloat16:
      return Scale16<HalfToFloat, FloatToHalf>(buffer, count, factor);
    case DataType::kBFloat16:
      return Scale16<BFloat16ToFloat, FloatToBFloat16>(buffer, count, factor);
  }
}

}  // namespace hvd::runtime
