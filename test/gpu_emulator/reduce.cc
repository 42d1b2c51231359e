// The emulated NCCL's arithmetic (reduce.h): every reduction in the tensor's own type, as a
// GPU's kernels compute it.
#include "test/gpu_emulator/reduce.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

namespace hvd::gpu_emulator {

size_t TypeSize(ncclDataType_t t) {
  switch (t) {
    case ncclInt8:
    case ncclUint8:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    case ncclInt64:
    case ncclUint64:
    case ncclFloat64:
      return 8;
    default:
      return 0;
  }
}

namespace {

template <typename T>
double ToDouble(T v) {
  return static_cast<double>(v);
}
template <>
double ToDouble(__half v) {
  return static_cast<double>(__half2float(v));
}
template <>
double ToDouble(__nv_bfloat16 v) {
  return static_cast<double>(__bfloat162float(v));
}

template <typename T>
T FromDouble(double v) {
  return static_cast<T>(v);
}
template <>
__half FromDouble(double v) {
  return __float2half(static_cast<float>(v));
}
template <>
__nv_bfloat16 FromDouble(double v) {
  return __float2bfloat16(static_cast<float>(v));
}

template <typename T>
constexpr bool kIntegral = std::is_integral_v<T>;

// Whether a pre-multiplied sum of T adds a later rank's product to the partial sum before
// rounding the product (acc = round(acc + x * s), a fused multiply-add), as NCCL 2.28.9 did on
// an H200 for every floating-point type (the 2026-11-28 run, 3 ranks: float32 -26 times
// 0.618034 summed to -48.2066536 where the products rounded first give -48.2066498; float16
// -48.21875 for -48.25; bfloat16 143 for 142; docs/gpu.md "Scale factors"). The first
// contribution is the product rounded, as is hvd's scaling kernel's (ScaleAll).
template <typename T>
constexpr bool kPremulFused = !std::is_integral_v<T>;

// acc = acc (op) x, each step rounded to T as the GPU does. The first contribution is
// `first`: acc = x (pre-multiplied for a scaled sum).
template <typename T>
void Fold(T* acc, const T* x, size_t n, const Reduction& red, bool first) {
  for (size_t i = 0; i < n; ++i) {
    T v = x[i];
    if (red.premul && !first && kPremulFused<T>) {
      // The product unrounded: float64 through fma, the narrower types summed in double.
      acc[i] = FromDouble<T>(std::fma(ToDouble(v), red.scalar, ToDouble(acc[i])));
      continue;
    }
    if (red.premul) v = FromDouble<T>(ToDouble(v) * red.scalar);
    if (first) {
      acc[i] = v;
      continue;
    }
    if constexpr (kIntegral<T>) {
      switch (red.op) {
        case ncclProd:
          acc[i] = static_cast<T>(acc[i] * v);
          break;
        case ncclMax:
          acc[i] = std::max(acc[i], v);
          break;
        case ncclMin:
          acc[i] = std::min(acc[i], v);
          break;
        default:
          acc[i] = static_cast<T>(acc[i] + v);
          break;
      }
    } else {
      const double a = ToDouble(acc[i]), b = ToDouble(v);
      double r;
      switch (red.op) {
        case ncclProd:
          r = a * b;
          break;
        case ncclMax:
          r = std::max(a, b);
          break;
        case ncclMin:
          r = std::min(a, b);
          break;
        default:
          r = a + b;
          break;
      }
      if constexpr (std::is_same_v<T, float>) {
        acc[i] = static_cast<float>(r);  // float + float in float (exact in double, rounded once)
      } else {
        acc[i] = FromDouble<T>(r);
      }
    }
  }
}

template <typename T>
void Divide(T* acc, size_t n, int by) {
  for (size_t i = 0; i < n; ++i) {
    if constexpr (kIntegral<T>) {
      acc[i] = static_cast<T>(acc[i] / by);
    } else {
      acc[i] = FromDouble<T>(ToDouble(acc[i]) / by);
    }
  }
}

template <typename F>
void Dispatch(ncclDataType_t t, const F& f) {
  switch (t) {
    case ncclInt8:
      f(int8_t{});
      break;
    case ncclUint8:
      f(uint8_t{});
      break;
    case ncclInt32:
      f(int32_t{});
      break;
    case ncclUint32:
      f(uint32_t{});
      break;
    case ncclInt64:
      f(int64_t{});
      break;
    case ncclUint64:
      f(uint64_t{});
      break;
    case ncclFloat16:
      f(__half{});
      break;
    case ncclBfloat16:
      f(__nv_bfloat16{});
      break;
    case ncclFloat32:
      f(float{});
      break;
    case ncclFloat64:
      f(double{});
      break;
    default:
      break;
  }
}

}  // namespace

// (reduce.h)
void ReduceAll(char* out, const std::vector<const char*>& sources, size_t count,
               ncclDataType_t type, const Reduction& red) {
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    T* acc = reinterpret_cast<T*>(out);
    Reduction folded = red;
    if (red.op == ncclAvg) {
      folded.op = ncclSum;
      if constexpr (!kIntegral<T>) {
        folded.premul = true;  // NCCL's average of floats: a sum pre-multiplied by 1/n
        folded.scalar = 1.0 / static_cast<double>(sources.size());
      }
    }
    // Reduced into a scratch copy: `out` may be one of the sources (in place).
    std::vector<T> scratch(count);
    for (size_t r = 0; r < sources.size(); ++r) {
      Fold(scratch.data(), reinterpret_cast<const T*>(sources[r]), count, folded, r == 0);
    }
    if (red.op == ncclAvg && kIntegral<T>)
      Divide(scratch.data(), count, static_cast<int>(sources.size()));
    std::memcpy(acc, scratch.data(), count * sizeof(T));
  });
}

void ScaleAll(char* out, const char* in, size_t count, ncclDataType_t type, const void* factor) {
  // A pre-multiplied sum's first contribution is exactly this product (Fold).
  Reduction scale;
  scale.premul = true;
  scale.scalar = ScalarValue(factor, type);
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    Fold(reinterpret_cast<T*>(out), reinterpret_cast<const T*>(in), count, scale, true);
  });
}

double ScalarValue(const void* scalar, ncclDataType_t type) {
  double value = 0;
  Dispatch(type, [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, scalar, sizeof(T));
    value = ToDouble(v);
  });
  return value;
}

}  // namespace hvd::gpu_emulator
