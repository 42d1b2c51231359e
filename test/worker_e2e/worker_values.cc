#include "worker_values.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace hvd_worker {
namespace {

// IEEE half <-> float for the worker's own encoding (round to nearest even; the values the
// scenarios use are exact).
uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const uint32_t sign = (x >> 16) & 0x8000u;
  const int32_t exp = static_cast<int32_t>((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffffu;
  if (((x >> 23) & 0xff) == 0xff) return static_cast<uint16_t>(sign | 0x7c00u | (mant ? 1 : 0));
  if (exp >= 0x1f) return static_cast<uint16_t>(sign | 0x7c00u);
  if (exp <= 0) {
    if (exp < -10) return static_cast<uint16_t>(sign);
    mant |= 0x800000u;
    const uint32_t shift = static_cast<uint32_t>(14 - exp);
    uint32_t half = mant >> shift;
    const uint32_t rem = mant & ((1u << shift) - 1), mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u))) ++half;
    return static_cast<uint16_t>(sign | half);
  }
  uint32_t half = sign | (static_cast<uint32_t>(exp) << 10) | (mant >> 13);
  const uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u))) ++half;
  return static_cast<uint16_t>(half);
}

float HalfToFloat(uint16_t h) {
  const int32_t exp = (h >> 10) & 0x1f;
  const int32_t mant = h & 0x3ff;
  float v;
  if (exp == 0) {
    v = std::ldexp(static_cast<float>(mant), -24);
  } else if (exp == 0x1f) {
    v = mant ? NAN : INFINITY;
  } else {
    v = std::ldexp(static_cast<float>(mant | 0x400), exp - 25);
  }
  return (h & 0x8000u) ? -v : v;
}

uint16_t FloatToBFloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

float BFloat16ToFloat(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &x, sizeof(f));
  return f;
}

template <typename T>
void Put(unsigned char* p, T v) {
  std::memcpy(p, &v, sizeof(T));
}

template <typename T>
T Take(const unsigned char* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

const std::vector<DType>& AllDTypes() {
  static const std::vector<DType> all = {
      {HVD_UINT8, "uint8", 1, false, false},   {HVD_INT8, "int8", 1, true, false},
      {HVD_UINT16, "uint16", 2, false, false}, {HVD_INT16, "int16", 2, true, false},
      {HVD_INT32, "int32", 4, true, false},    {HVD_INT64, "int64", 8, true, false},
      {HVD_FLOAT16, "float16", 2, true, true}, {HVD_BFLOAT16, "bfloat16", 2, true, true},
      {HVD_FLOAT32, "float32", 4, true, true}, {HVD_FLOAT64, "float64", 8, true, true},
      {HVD_BOOL, "bool", 1, false, false},
  };
  return all;
}

const DType* FindDType(hvd_dtype_t id) {
  for (const DType& d : AllDTypes()) {
    if (d.id == id) return &d;
  }
  return nullptr;
}

void SetElement(unsigned char* p, hvd_dtype_t dtype, double v) {
  switch (dtype) {
    case HVD_UINT8:
      return Put<uint8_t>(p, static_cast<uint8_t>(v));
    case HVD_INT8:
      return Put<int8_t>(p, static_cast<int8_t>(v));
    case HVD_UINT16:
      return Put<uint16_t>(p, static_cast<uint16_t>(v));
    case HVD_INT16:
      return Put<int16_t>(p, static_cast<int16_t>(v));
    case HVD_INT32:
      return Put<int32_t>(p, static_cast<int32_t>(v));
    case HVD_INT64:
      return Put<int64_t>(p, static_cast<int64_t>(v));
    case HVD_FLOAT16:
      return Put<uint16_t>(p, FloatToHalf(static_cast<float>(v)));
    case HVD_BFLOAT16:
      return Put<uint16_t>(p, FloatToBFloat16(static_cast<float>(v)));
    case HVD_FLOAT32:
      return Put<float>(p, static_cast<float>(v));
    case HVD_FLOAT64:
      return Put<double>(p, v);
    case HVD_BOOL:
      return Put<uint8_t>(p, v != 0 ? 1 : 0);
  }
}

double GetElement(const unsigned char* p, hvd_dtype_t dtype) {
  switch (dtype) {
    case HVD_UINT8:
    case HVD_BOOL:
      return Take<uint8_t>(p);
    case HVD_INT8:
      return Take<int8_t>(p);
    case HVD_UINT16:
      return Take<uint16_t>(p);
    case HVD_INT16:
      return Take<int16_t>(p);
    case HVD_INT32:
      return Take<int32_t>(p);
    case HVD_INT64:
      return static_cast<double>(Take<int64_t>(p));
    case HVD_FLOAT16:
      return HalfToFloat(Take<uint16_t>(p));
    case HVD_BFLOAT16:
      return BFloat16ToFloat(Take<uint16_t>(p));
    case HVD_FLOAT32:
      return Take<float>(p);
    case HVD_FLOAT64:
      return Take<double>(p);
  }
  return NAN;
}

const char* ReduceOpName(hvd_reduce_op_t op) {
  switch (op) {
    case HVD_OP_AVERAGE:
      return "Average";
    case HVD_OP_SUM:
      return "Sum";
    case HVD_OP_ADASUM:
      return "Adasum";
    case HVD_OP_MIN:
      return "Min";
    case HVD_OP_MAX:
      return "Max";
    case HVD_OP_PRODUCT:
      return "Product";
  }
  return "?";
}

double ReduceInput(hvd_reduce_op_t op, const DType& d, int32_t pos, int32_t n, int64_t i) {
  // Bit pos % 4 of i + pos / 4: members 4 apart differ, and "all" holds for some i at any n.
  if (d.id == HVD_BOOL) return static_cast<double>(((i + pos / 4) >> (pos % 4)) & 1);
  const double sign = d.is_signed && (i % 2) ? -1.0 : 1.0;
  if (op == HVD_OP_PRODUCT) {
    // Four members (rotating with i) give 1..3, the others 1: |product| <= 81 for any n.
    const bool counts = ((pos - i) % n + n) % n < 4;
    return sign * (counts ? static_cast<double>((pos + i) % 3 + 1) : 1.0);
  }
  // Pairs of members (2k, 2k + 1) get +m and -m, m = 1 + k % 3; an odd n's last member 0.
  const int32_t k = pos / 2;
  const double m = pos == n - 1 && n % 2 ? 0.0 : 1.0 + k % 3;
  const double base = static_cast<double>(3 + i % 5), delta = pos % 2 ? -m : m;
  return sign * (base + delta);
}

bool ReduceFits(hvd_reduce_op_t op, const DType& d, int32_t n, double prescale, double postscale) {
  if (d.is_float || d.id == HVD_BOOL) return true;
  const double max = std::ldexp(1.0, static_cast<int>(8 * d.size) - (d.is_signed ? 1 : 0)) - 1;
  for (int64_t i = 0; i < 15; ++i) {  // every base and sign
    double total = 0;
    for (int32_t p = 0; p < n; ++p) total += ReduceInput(op, d, p, n, i) * prescale;
    const double result = ReduceExpected(op, d, n, i, prescale, postscale);
    if (std::fabs(total) > max || std::fabs(result) > max || (result < 0 && !d.is_signed)) {
      return false;
    }
  }
  return true;
}

double ReduceExpected(hvd_reduce_op_t op, const DType& d, int32_t n, int64_t i, double prescale,
                      double postscale) {
  if (d.id == HVD_BOOL) {  // Sum/Max: any; Min/Product: all (scales do not apply)
    const bool all = op == HVD_OP_MIN || op == HVD_OP_PRODUCT;
    bool acc = all;
    for (int32_t p = 0; p < n; ++p) {
      const bool x = ReduceInput(op, d, p, n, i) != 0;
      acc = all ? (acc && x) : (acc || x);
    }
    return acc ? 1 : 0;
  }
  double acc = 0;
  for (int32_t p = 0; p < n; ++p) {
    const double x = ReduceInput(op, d, p, n, i) * prescale;
    if (p == 0) {
      acc = x;
    } else if (op == HVD_OP_MIN) {
      acc = std::min(acc, x);
    } else if (op == HVD_OP_MAX) {
      acc = std::max(acc, x);
    } else if (op == HVD_OP_PRODUCT) {
      acc *= x;
    } else {
      acc += x;
    }
  }
  if (op == HVD_OP_AVERAGE) acc /= n;
  return acc * postscale;
}

std::string List(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

}  // namespace hvd_worker
