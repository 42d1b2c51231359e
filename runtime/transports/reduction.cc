#include "runtime/transports/reduction.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "common/check.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define HVD_REDUCTION_X86 1
#endif

namespace hvd::runtime {
namespace {

// How the kernels are made fast. Every loop has its reduce op as a template parameter, so its
// body is one operation the compiler vectorises (this file is built with -O3; see
// runtime/transports/CMakeLists.txt); the op is chosen once per call, never per element. On
// x86-64 each dtype's entry point is compiled twice (target_clones): for AVX2 and for the
// baseline, and the loader picks by CPU. float16 converts through F16C when the CPU has it
// (vcvtph2ps/vcvtps2ph round to nearest even exactly as FloatToHalf does; only NaN payloads can
// differ) and through the scalar conversions otherwise. bfloat16 converts with shifts, so the
// plain loops vectorise. Elementwise: vectorising changes no result bit.
#if defined(HVD_REDUCTION_X86)
#define HVD_KERNEL __attribute__((target_clones("avx2", "default")))
#else
#define HVD_KERNEL
#endif
#define HVD_ALWAYS_INLINE inline __attribute__((always_inline))

// Integers wrap around (two's complement) as they do in torch: they are added and multiplied
// as unsigned values at least as wide as unsigned int (int16 * int16 would be promoted to int
// and overflow, which is undefined), then converted back.
template <typename T, bool = std::is_integral_v<T>>
struct ArithOf {
  using type = T;
};
template <typename T>
struct ArithOf<T, true> {
  using type =
      std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;
};
template <typename T>
using Arith = typename ArithOf<T>::type;

template <ReduceOp Op, typename T>
HVD_ALWAYS_INLINE T Apply(T a, T b) {
  if constexpr (Op == ReduceOp::kMin) {
    return std::min(a, b);
  } else if constexpr (Op == ReduceOp::kMax) {
    return std::max(a, b);
  } else if constexpr (Op == ReduceOp::kProduct) {
    return static_cast<T>(static_cast<Arith<T>>(a) * static_cast<Arith<T>>(b));
  } else {
    return static_cast<T>(static_cast<Arith<T>>(a) + static_cast<Arith<T>>(b));
  }
}

// d[i] = op(a[i], b[i]); d may be a or b (elementwise, so exact aliasing is harmless).
template <typename T, ReduceOp Op>
HVD_ALWAYS_INLINE void Loop(T* d, const T* a, const T* b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) d[i] = Apply<Op>(a[i], b[i]);
}

// Calls loop(std::integral_constant<ReduceOp, op>): the runtime op becomes the loops' template
// parameter in one place. Everything inlines, so inside a target_clones entry point the loop
// is compiled for that clone's target.
template <typename F>
HVD_ALWAYS_INLINE void ByOp(ReduceOp op, F&& loop) {
  switch (op) {
    case ReduceOp::kMin:
      return loop(std::integral_constant<ReduceOp, ReduceOp::kMin>{});
    case ReduceOp::kMax:
      return loop(std::integral_constant<ReduceOp, ReduceOp::kMax>{});
    case ReduceOp::kProduct:
      return loop(std::integral_constant<ReduceOp, ReduceOp::kProduct>{});
    default:
      return loop(std::integral_constant<ReduceOp, ReduceOp::kSum>{});
  }
}

template <typename T>
HVD_ALWAYS_INLINE void Typed(void* dst, const void* a, const void* b, int64_t n, ReduceOp op) {
  T* d = static_cast<T*>(dst);
  const T* x = static_cast<const T*>(a);
  const T* y = static_cast<const T*>(b);
  ByOp(
      op, [&](auto o) __attribute__((always_inline)) { Loop<T, decltype(o)::value>(d, x, y, n); });
}

// One pass of ReduceStep over M inputs: d[i] = op(...op(v, s1[i])..., s{M-1}[i]) with v = s0[i]
// when First, else op(d[i], s0[i]): the pairwise loop's operations in its order, M at a time.
// With Scaled, each result is then multiplied by `f` (ScaleBuffer's float32 / float64
// multiplication, in the same pass).
template <typename T, ReduceOp Op, int M, bool First, bool Scaled = false>
HVD_ALWAYS_INLINE void LoopFan(T* d, const T* const* in, int64_t n, T f = T(1)) {
  const T* s0 = in[0];
  const T* s1 = M > 1 ? in[1] : nullptr;
  const T* s2 = M > 2 ? in[2] : nullptr;
  const T* s3 = M > 3 ? in[3] : nullptr;
  for (int64_t i = 0; i < n; ++i) {
    T v = First ? s0[i] : Apply<Op>(d[i], s0[i]);
    if constexpr (M > 1) v = Apply<Op>(v, s1[i]);
    if constexpr (M > 2) v = Apply<Op>(v, s2[i]);
    if constexpr (M > 3) v = Apply<Op>(v, s3[i]);
    if constexpr (Scaled) v *= f;
    d[i] = v;
  }
}

template <typename T, bool Scaled = false>
HVD_ALWAYS_INLINE void TypedFan(void* dst, const void* const* in, int m, int64_t n, ReduceOp op,
                                bool first, T f = T(1)) {
  T* d = static_cast<T*>(dst);
  const T* const* s = reinterpret_cast<const T* const*>(in);
  ByOp(
      op, [&](auto o) __attribute__((always_inline)) {
        constexpr ReduceOp kOp = decltype(o)::value;
        switch (m * 2 + (first ? 1 : 0)) {
          case 2:
            return LoopFan<T, kOp, 1, false, Scaled>(d, s, n, f);
          case 4:
            return LoopFan<T, kOp, 2, false, Scaled>(d, s, n, f);
          case 5:
            return LoopFan<T, kOp, 2, true, Scaled>(d, s, n, f);
          case 6:
            return LoopFan<T, kOp, 3, false, Scaled>(d, s, n, f);
          case 7:
            return LoopFan<T, kOp, 3, true, Scaled>(d, s, n, f);
          case 8:
            return LoopFan<T, kOp, 4, false, Scaled>(d, s, n, f);
          case 9:
            return LoopFan<T, kOp, 4, true, Scaled>(d, s, n, f);
          default:  // 3: one input, first: a copy
            return LoopFan<T, kOp, 1, true, Scaled>(d, s, n, f);
        }
      });
}

HVD_KERNEL void FanU8(void* d, const void* const* in, int m, int64_t n, ReduceOp op, bool first) {
  TypedFan<uint8_t>(d, in, m, n, op, first);
}
HVD_KERNEL void FanI8(void* d, const void* const* in, int m, int64_t n, ReduceOp op, bool first) {
  TypedFan<int8_t>(d, in, m, n, op, first);
}
HVD_KERNEL void FanU16(void* d, const void* const* in, int m, int64_t n, ReduceOp op, bool first) {
  TypedFan<uint16_t>(d, in, m, n, op, first);
}
HVD_KERNEL void FanI16(void* d, const void* const* in, int m, int64_t n, ReduceOp op, bool first) {
  TypedFan<int16_t>(d, in, m, n, op, first);
}
HVD_KERNEL void FanI32(void* d, const void* const* in, int m, int64_t n, ReduceOp op, bool first) {
  TypedFan<int32_t>(d, in, m, n, op, first);
}
HVD_KERNEL void FanI64(void* d, const void* const* in, int m, int64_t n, ReduceOp op, bool first) {
  TypedFan<int64_t>(d, in, m, n, op, first);
}
HVD_KERNEL void FanF32(void* d, const void* const* in, int m, int64_t n, ReduceOp op, bool first) {
  TypedFan<float>(d, in, m, n, op, first);
}
HVD_KERNEL void FanF64(void* d, const void* const* in, int m, int64_t n, ReduceOp op, bool first) {
  TypedFan<double>(d, in, m, n, op, first);
}
HVD_KERNEL void FanF32Scaled(void* d, const void* const* in, int m, int64_t n, ReduceOp op,
                             bool first, float f) {
  TypedFan<float, true>(d, in, m, n, op, first, f);
}
HVD_KERNEL void FanF64Scaled(void* d, const void* const* in, int m, int64_t n, ReduceOp op,
                             bool first, double f) {
  TypedFan<double, true>(d, in, m, n, op, first, f);
}

HVD_KERNEL void ReduceU8(void* d, const void* a, const void* b, int64_t n, ReduceOp op) {
  Typed<uint8_t>(d, a, b, n, op);
}
HVD_KERNEL void ReduceI8(void* d, const void* a, const void* b, int64_t n, ReduceOp op) {
  Typed<int8_t>(d, a, b, n, op);
}
HVD_KERNEL void ReduceU16(void* d, const void* a, const void* b, int64_t n, ReduceOp op) {
  Typed<uint16_t>(d, a, b, n, op);
}
HVD_KERNEL void ReduceI16(void* d, const void* a, const void* b, int64_t n, ReduceOp op) {
  Typed<int16_t>(d, a, b, n, op);
}
HVD_KERNEL void ReduceI32(void* d, const void* a, const void* b, int64_t n, ReduceOp op) {
  Typed<int32_t>(d, a, b, n, op);
}
HVD_KERNEL void ReduceI64(void* d, const void* a, const void* b, int64_t n, ReduceOp op) {
  Typed<int64_t>(d, a, b, n, op);
}
HVD_KERNEL void ReduceF32(void* d, const void* a, const void* b, int64_t n, ReduceOp op) {
  Typed<float>(d, a, b, n, op);
}
HVD_KERNEL void ReduceF64(void* d, const void* a, const void* b, int64_t n, ReduceOp op) {
  Typed<double>(d, a, b, n, op);
}

void ReduceBool(void* dst, const void* a, const void* b, int64_t count, ReduceOp op) {
  uint8_t* d = static_cast<uint8_t*>(dst);
  const uint8_t* x = static_cast<const uint8_t*>(a);
  const uint8_t* y = static_cast<const uint8_t*>(b);
  const bool conj = op == ReduceOp::kProduct || op == ReduceOp::kMin;
  for (int64_t i = 0; i < count; ++i) {
    const bool p = x[i] != 0, q = y[i] != 0;
    d[i] = conj ? (p && q) : (p || q);
  }
}

// bfloat16 <-> float without branches, so the loops over them vectorise (and the public
// BFloat16ToFloat / FloatToBFloat16). A NaN stays a NaN (quiet), whatever rounding would do.
HVD_ALWAYS_INLINE float Bf16ToF(uint16_t b) {
  const uint32_t bits = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof(f));
  return f;
}

HVD_ALWAYS_INLINE uint16_t FToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, sizeof(x));
  const uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;  // nearest even
  const uint32_t quiet_nan = (x >> 16) | 0x40u;
  return static_cast<uint16_t>((x & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

template <ReduceOp Op>
void LoopBf16Scalar(uint16_t* d, const uint16_t* a, const uint16_t* b, int64_t from, int64_t n) {
  for (int64_t i = from; i < n; ++i) d[i] = FToBf16(Apply<Op>(Bf16ToF(a[i]), Bf16ToF(b[i])));
}

template <ReduceOp Op>
void LoopHalfScalar(uint16_t* d, const uint16_t* a, const uint16_t* b, int64_t from, int64_t n) {
  for (int64_t i = from; i < n; ++i)
    d[i] = FloatToHalf(Apply<Op>(HalfToFloat(a[i]), HalfToFloat(b[i])));
}

#if defined(HVD_REDUCTION_X86)
bool HasAvx2() {
  static const bool has = __builtin_cpu_supports("avx2");
  return has;
}

// CPUID rather than __builtin_cpu_supports("f16c"), which clang 14 (the sanitizer build's
// compiler) does not know.
bool HasF16c() {
  static const bool has = HasAvx2() && [] {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) != 0 && (ecx & bit_F16C) != 0;
  }();
  return has;
}

// The op on eight floats as Apply computes it, NaNs included (vminps/vmaxps return their second
// operand when either is NaN, as std::min/std::max do).
template <ReduceOp Op>
__attribute__((target("avx2"), always_inline)) inline __m256 ApplyPs(__m256 x, __m256 y) {
  if constexpr (Op == ReduceOp::kMin) {
    return _mm256_min_ps(y, x);  // std::min(x, y) == (y < x ? y : x)
  } else if constexpr (Op == ReduceOp::kMax) {
    return _mm256_max_ps(y, x);  // std::max(x, y) == (x < y ? y : x)
  } else if constexpr (Op == ReduceOp::kProduct) {
    return _mm256_mul_ps(x, y);
  } else {
    return _mm256_add_ps(x, y);
  }
}

// Eight halves per step through F16C, the rest through the scalar loop.
template <ReduceOp Op>
__attribute__((target("avx2,f16c"))) void LoopHalfF16c(uint16_t* d, const uint16_t* a,
                                                       const uint16_t* b, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(
        reinterpret_cast<__m128i*>(d + i),
        _mm256_cvtps_ph(ApplyPs<Op>(x, y), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  LoopHalfScalar<Op>(d, a, b, i, n);
}

// Eight bfloat16 per step: widen by a shift, round back to nearest even, NaN kept quiet (the
// vector form of Bf16ToF / FToBf16; GCC's own vectorisation of those ran at a quarter of this).
__attribute__((target("avx2"), always_inline)) inline __m256 LoadBf16(const uint16_t* p) {
  const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

__attribute__((target("avx2"), always_inline)) inline void StoreBf16(uint16_t* d, __m256 v) {
  const __m256i one = _mm256_set1_epi32(1), bias = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  const __m256i quiet = _mm256_set1_epi32(0x40);
  const __m256i x = _mm256_castps_si256(v);
  const __m256i high = _mm256_srli_epi32(x, 16);
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(x, _mm256_add_epi32(bias, _mm256_and_si256(high, one))), 16);
  const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(x, abs_mask), inf);
  const __m256i r = _mm256_blendv_epi8(rounded, _mm256_or_si256(high, quiet), nan);
  // Every lane is below 0x10000, so the saturating pack is exact; it packs within 128-bit
  // lanes, and the permute puts the two halves back in order.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(r, r), 0x08);
  _mm_storeu_si128(reinterpret_cast<__m128i*>(d), _mm256_castsi256_si128(packed));
}

template <ReduceOp Op>
__attribute__((target("avx2"))) void LoopBf16Avx2(uint16_t* d, const uint16_t* a, const uint16_t* b,
                                                  int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) StoreBf16(d + i, ApplyPs<Op>(LoadBf16(a + i), LoadBf16(b + i)));
  LoopBf16Scalar<Op>(d, a, b, i, n);
}

// b[i] *= f over whole groups of eight; returns how many were done.
__attribute__((target("avx2,f16c"))) int64_t ScaleHalfF16c(uint16_t* b, int64_t n, float f) {
  const __m256 k = _mm256_set1_ps(f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    auto* p = reinterpret_cast<__m128i*>(b + i);
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(p));
    _mm_storeu_si128(
        p, _mm256_cvtps_ph(_mm256_mul_ps(x, k), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
  return i;
}

__attribute__((target("avx2"))) int64_t ScaleBf16Avx2(uint16_t* b, int64_t n, float f) {
  const __m256 k = _mm256_set1_ps(f);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) StoreBf16(b + i, _mm256_mul_ps(LoadBf16(b + i), k));
  return i;
}

__attribute__((target("avx2,f16c"), always_inline)) inline __m256 LoadHalf(const uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// One pass of the float accumulator (AccumulateStep) over M inputs, eight lanes per step: v =
// First ? in[0] : acc, then v = op(v, in[j]) for the others in order, stored to acc, or rounded
// into dst when Last. The tail goes through the scalar conversions.
template <bool Bf16>
__attribute__((target("avx2,f16c"), always_inline)) inline __m256 LoadWide(const uint16_t* p) {
  return Bf16 ? LoadBf16(p) : LoadHalf(p);
}

template <bool Bf16>
HVD_ALWAYS_INLINE float ToWide(uint16_t h) {
  return Bf16 ? Bf16ToF(h) : HalfToFloat(h);
}

template <bool Bf16, ReduceOp Op, int M, bool First, bool Last>
HVD_ALWAYS_INLINE void WideStepTail(float* acc, uint16_t* dst, const uint16_t* const* in,
                                    int64_t from, int64_t n) {
  for (int64_t i = from; i < n; ++i) {
    float v = First ? ToWide<Bf16>(in[0][i]) : acc[i];
    for (int j = First ? 1 : 0; j < M; ++j) v = Apply<Op>(v, ToWide<Bf16>(in[j][i]));
    if constexpr (Last) {
      dst[i] = Bf16 ? FToBf16(v) : FloatToHalf(v);
    } else {
      acc[i] = v;
    }
  }
}

template <bool Bf16, ReduceOp Op, int M, bool First, bool Last>
__attribute__((target("avx2,f16c"))) void WideStepAvx2(float* acc, uint16_t* dst,
                                                       const uint16_t* const* in, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    __m256 v = First ? LoadWide<Bf16>(in[0] + i) : _mm256_loadu_ps(acc + i);
    for (int j = First ? 1 : 0; j < M; ++j) v = ApplyPs<Op>(v, LoadWide<Bf16>(in[j] + i));
    if constexpr (!Last) {
      _mm256_storeu_ps(acc + i, v);
    } else if constexpr (Bf16) {
      StoreBf16(dst + i, v);
    } else {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                       _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    }
  }
  WideStepTail<Bf16, Op, M, First, Last>(acc, dst, in, i, n);
}
#endif

template <bool Bf16, ReduceOp Op, int M, bool First, bool Last>
void WideStep(float* acc, uint16_t* dst, const uint16_t* const* in, int64_t n) {
#if defined(HVD_REDUCTION_X86)
  if (HasF16c()) return WideStepAvx2<Bf16, Op, M, First, Last>(acc, dst, in, n);
#endif
  WideStepTail<Bf16, Op, M, First, Last>(acc, dst, in, 0, n);
}

// WideStep with the runtime arguments made template ones (m: 1..kReduceFan, or 0 to round acc).
template <bool Bf16, ReduceOp Op>
void WideStepFor(float* acc, uint16_t* dst, const uint16_t* const* in, int m, bool first,
                 int64_t n) {
  auto by_m = [&](auto fst, auto lst) {
    constexpr bool kFirst = decltype(fst)::value, kLast = decltype(lst)::value;
    switch (m) {
      case 0:
        if constexpr (!kFirst) return WideStep<Bf16, Op, 0, false, kLast>(acc, dst, in, n);
        break;
      case 1:
        return WideStep<Bf16, Op, 1, kFirst, kLast>(acc, dst, in, n);
      case 2:
        return WideStep<Bf16, Op, 2, kFirst, kLast>(acc, dst, in, n);
      case 3:
        return WideStep<Bf16, Op, 3, kFirst, kLast>(acc, dst, in, n);
      default:
        return WideStep<Bf16, Op, 4, kFirst, kLast>(acc, dst, in, n);
    }
  };
  using T = std::true_type;
  using F = std::false_type;
  const bool last = dst != nullptr;
  if (first) return last ? by_m(T{}, T{}) : by_m(T{}, F{});
  return last ? by_m(F{}, T{}) : by_m(F{}, F{});
}

template <ReduceOp Op>
void LoopBf16(uint16_t* d, const uint16_t* a, const uint16_t* b, int64_t n) {
#if defined(HVD_REDUCTION_X86)
  if (HasAvx2()) return LoopBf16Avx2<Op>(d, a, b, n);
#endif
  LoopBf16Scalar<Op>(d, a, b, 0, n);
}

template <ReduceOp Op>
void LoopHalf(uint16_t* d, const uint16_t* a, const uint16_t* b, int64_t n) {
#if defined(HVD_REDUCTION_X86)
  if (HasF16c()) return LoopHalfF16c<Op>(d, a, b, n);
#endif
  LoopHalfScalar<Op>(d, a, b, 0, n);
}

void ReduceHalf(void* dst, const void* a, const void* b, int64_t n, ReduceOp op) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  ByOp(op, [&](auto o) { LoopHalf<decltype(o)::value>(d, x, y, n); });
}

void ReduceBf16(void* dst, const void* a, const void* b, int64_t n, ReduceOp op) {
  auto* d = static_cast<uint16_t*>(dst);
  const auto* x = static_cast<const uint16_t*>(a);
  const auto* y = static_cast<const uint16_t*>(b);
  ByOp(op, [&](auto o) { LoopBf16<decltype(o)::value>(d, x, y, n); });
}

template <typename T>
HVD_ALWAYS_INLINE void ScaleTyped(void* buffer, int64_t count, double factor) {
  T* b = static_cast<T*>(buffer);
  for (int64_t i = 0; i < count; ++i) b[i] = static_cast<T>(static_cast<double>(b[i]) * factor);
}

HVD_KERNEL void ScaleIntegers(void* buffer, int64_t count, DataType dtype, double factor) {
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
    default:
      return ScaleTyped<double>(buffer, count, factor);
  }
}

// float32 scales in float32 by the factor rounded to float, as Horovod (and torch's
// `tensor * factor`) do; the float64 product rounded once differs in the last bit.
HVD_KERNEL void ScaleFloat(void* buffer, int64_t count, double factor) {
  float* b = static_cast<float*>(buffer);
  const float f = static_cast<float>(factor);
  for (int64_t i = 0; i < count; ++i) b[i] *= f;
}

// The 16-bit floats scale eight at a time where the CPU can (the same bits: F16C rounds as
// FloatToHalf does, StoreBf16 as FToBf16): an Average's 1/n after a transport that does not fold
// it into its reduction, a prescale. The scalar float16 loop ran ~10x slower than the allreduce
// itself (hvd-bench float16 Average, 2 ranks, 1 MiB: 2.1 ms against 0.17, 2026-11-26).
void ScaleBf16(void* buffer, int64_t count, double factor) {
  uint16_t* b = static_cast<uint16_t*>(buffer);
  const float f = static_cast<float>(factor);
  int64_t i = 0;
#if defined(HVD_REDUCTION_X86)
  if (HasAvx2()) i = ScaleBf16Avx2(b, count, f);
#endif
  for (; i < count; ++i) b[i] = FToBf16(Bf16ToF(b[i]) * f);
}

void ScaleHalf(void* buffer, int64_t count, double factor) {
  uint16_t* b = static_cast<uint16_t*>(buffer);
  const float f = static_cast<float>(factor);
  int64_t i = 0;
#if defined(HVD_REDUCTION_X86)
  if (HasF16c()) i = ScaleHalfF16c(b, count, f);
#endif
  for (; i < count; ++i) b[i] = FloatToHalf(HalfToFloat(b[i]) * f);
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

float BFloat16ToFloat(uint16_t b) { return Bf16ToF(b); }

uint16_t FloatToBFloat16(float f) { return FToBf16(f); }

void Reduce(void* dst, const void* a, const void* b, int64_t count, DataType dtype, ReduceOp op) {
  HVD_CHECK(op != ReduceOp::kAdasum) << "Adasum is not an elementwise reduction";
  switch (dtype) {
    case DataType::kUInt8:
      return ReduceU8(dst, a, b, count, op);
    case DataType::kInt8:
      return ReduceI8(dst, a, b, count, op);
    case DataType::kUInt16:
      return ReduceU16(dst, a, b, count, op);
    case DataType::kInt16:
      return ReduceI16(dst, a, b, count, op);
    case DataType::kInt32:
      return ReduceI32(dst, a, b, count, op);
    case DataType::kInt64:
      return ReduceI64(dst, a, b, count, op);
    case DataType::kFloat32:
      return ReduceF32(dst, a, b, count, op);
    case DataType::kFloat64:
      return ReduceF64(dst, a, b, count, op);
    case DataType::kBool:
      return ReduceBool(dst, a, b, count, op);
    case DataType::kFloat16:
      return ReduceHalf(dst, a, b, count, op);
    case DataType::kBFloat16:
      return ReduceBf16(dst, a, b, count, op);
  }
}

namespace {

// Eight independent accumulators per sum: one chain's adds wait for each other, eight keep the
// FPU busy and vectorise (the lanes, not the order of a chain, are reordered: the result is the
// same on every CPU and clone).
template <typename T>
HVD_ALWAYS_INLINE void AdasumSumsLoop(const T* a, const T* b, int64_t count, double* sums) {
  constexpr int kLanes = 8;
  double dot[kLanes] = {}, aa[kLanes] = {}, bb[kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= count; i += kLanes) {
    for (int l = 0; l < kLanes; ++l) {
      const double x = a[i + l], y = b[i + l];
      dot[l] += x * y;
      aa[l] += x * x;
      bb[l] += y * y;
    }
  }
  for (; i < count; ++i) {
    const double x = a[i], y = b[i];
    dot[0] += x * y;
    aa[0] += x * x;
    bb[0] += y * y;
  }
  for (int l = 0; l < kLanes; ++l) {
    sums[0] += dot[l];
    sums[1] += aa[l];
    sums[2] += bb[l];
  }
}

template <typename T>
HVD_ALWAYS_INLINE void AdasumScaleAddLoop(T* a, const T* b, int64_t count, T ac, T bc) {
  for (int64_t i = 0; i < count; ++i) a[i] = ac * a[i] + bc * b[i];
}

}  // namespace

HVD_KERNEL void AdasumSums(const float* a, const float* b, int64_t count, double* sums) {
  AdasumSumsLoop(a, b, count, sums);
}

HVD_KERNEL void AdasumSums(const double* a, const double* b, int64_t count, double* sums) {
  AdasumSumsLoop(a, b, count, sums);
}

HVD_KERNEL void AdasumScaleAdd(float* a, const float* b, int64_t count, double a_coeff,
                               double b_coeff) {
  AdasumScaleAddLoop(a, b, count, static_cast<float>(a_coeff), static_cast<float>(b_coeff));
}

HVD_KERNEL void AdasumScaleAdd(double* a, const double* b, int64_t count, double a_coeff,
                               double b_coeff) {
  AdasumScaleAddLoop(a, b, count, a_coeff, b_coeff);
}

void ReduceInto(void* dst, const void* src, int64_t count, DataType dtype, ReduceOp op) {
  Reduce(dst, dst, src, count, dtype, op);
}

void ReduceStep(void* dst, const void* const* in, int m, int64_t count, DataType dtype, ReduceOp op,
                bool first, double scale) {
  HVD_CHECK(op != ReduceOp::kAdasum) << "Adasum is not an elementwise reduction";
  HVD_CHECK(m >= 1 && m <= kReduceFan) << "ReduceStep of " << m << " inputs";
  if (scale != 1.0) {
    // float32 and float64 multiply in the pass (ScaleBuffer's operations: float32 by the factor
    // rounded to float, float64 in double); the others reduce, then ScaleBuffer.
    if (dtype == DataType::kFloat32) {
      return FanF32Scaled(dst, in, m, count, op, first, static_cast<float>(scale));
    }
    if (dtype == DataType::kFloat64) return FanF64Scaled(dst, in, m, count, op, first, scale);
    ReduceStep(dst, in, m, count, dtype, op, first);
    return ScaleBuffer(dst, count, dtype, scale);
  }
  switch (dtype) {
    case DataType::kUInt8:
      return FanU8(dst, in, m, count, op, first);
    case DataType::kInt8:
      return FanI8(dst, in, m, count, op, first);
    case DataType::kUInt16:
      return FanU16(dst, in, m, count, op, first);
    case DataType::kInt16:
      return FanI16(dst, in, m, count, op, first);
    case DataType::kInt32:
      return FanI32(dst, in, m, count, op, first);
    case DataType::kInt64:
      return FanI64(dst, in, m, count, op, first);
    case DataType::kFloat32:
      return FanF32(dst, in, m, count, op, first);
    case DataType::kFloat64:
      return FanF64(dst, in, m, count, op, first);
    default:  // bool and the 16-bit floats: the pairwise kernels, one input at a time
      break;
  }
  int j = 0;
  if (first) {
    if (m == 1) {
      if (dst != in[0]) std::memcpy(dst, in[0], static_cast<size_t>(count) * DataTypeSize(dtype));
      return;
    }
    Reduce(dst, in[0], in[1], count, dtype, op);
    j = 2;
  }
  for (; j < m; ++j) ReduceInto(dst, in[j], count, dtype, op);
}

bool AccumulatesInFloat(DataType dtype, ReduceOp op) {
  return (dtype == DataType::kFloat16 || dtype == DataType::kBFloat16) &&
         (op == ReduceOp::kSum || op == ReduceOp::kAverage || op == ReduceOp::kProduct);
}

void AccumulateStep(float* acc, void* dst, const void* const* in, int m, int64_t count,
                    DataType dtype, ReduceOp op, bool first) {
  HVD_CHECK(AccumulatesInFloat(dtype, op))
      << "no float accumulator for " << DataTypeName(dtype) << " " << ReduceOpName(op);
  HVD_CHECK(m >= (first ? 1 : 0) && m <= kReduceFan) << "AccumulateStep of " << m << " inputs";
  const auto* const* s = reinterpret_cast<const uint16_t* const*>(in);
  auto* d = static_cast<uint16_t*>(dst);
  const bool bf16 = dtype == DataType::kBFloat16;
  if (op == ReduceOp::kProduct) {
    return bf16 ? WideStepFor<true, ReduceOp::kProduct>(acc, d, s, m, first, count)
                : WideStepFor<false, ReduceOp::kProduct>(acc, d, s, m, first, count);
  }
  return bf16 ? WideStepFor<true, ReduceOp::kSum>(acc, d, s, m, first, count)
              : WideStepFor<false, ReduceOp::kSum>(acc, d, s, m, first, count);
}

void ScaleBuffer(void* buffer, int64_t count, DataType dtype, double factor) {
  if (factor == 1.0) return;
  switch (dtype) {
    case DataType::kFloat32:
      return ScaleFloat(buffer, count, factor);
    case DataType::kBool:
      return;  // scaling a boolean is meaningless; Horovod rejects it
    case DataType::kFloat16:
      return ScaleHalf(buffer, count, factor);
    case DataType::kBFloat16:
      return ScaleBf16(buffer, count, factor);
    default:  // integers and float64, through double
      return ScaleIntegers(buffer, count, dtype, factor);
  }
}

}  // namespace hvd::runtime
