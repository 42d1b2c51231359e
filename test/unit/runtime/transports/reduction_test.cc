#include "runtime/transports/reduction.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>
#include <vector>

namespace hvd::runtime {
namespace {

// The reference every kernel must match bit for bit: the op on one element at a time, 16-bit
// floats through the scalar conversions (what the kernels did before they were vectorised).
// An integer op's result as the kernels compute it: wrapped to T's width. (In T itself, 16-bit
// operands are promoted to int, whose overflow is undefined: UBSan, 65497 * 65499.)
template <typename T>
T Wrapped(uint64_t v) {
  return static_cast<T>(v);
}

template <typename T>
T RefOp(T a, T b, ReduceOp op) {
  switch (op) {
    case ReduceOp::kMin:
      return std::min(a, b);
    case ReduceOp::kMax:
      return std::max(a, b);
    case ReduceOp::kProduct:
      if constexpr (std::is_integral_v<T>) return Wrapped<T>(uint64_t(a) * uint64_t(b));
      return static_cast<T>(a * b);
    default:
      if constexpr (std::is_integral_v<T>) return Wrapped<T>(uint64_t(a) + uint64_t(b));
      return static_cast<T>(a + b);
  }
}

bool SameHalfResult(uint16_t got, uint16_t want, bool bf16) {
  const float g = bf16 ? BFloat16ToFloat(got) : HalfToFloat(got);
  const float w = bf16 ? BFloat16ToFloat(want) : HalfToFloat(want);
  if (std::isnan(w)) return std::isnan(g);  // only NaN payloads may differ
  return got == want;
}

constexpr ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct};

// Every 16-bit pattern (normals, subnormals, infinities, NaNs, both zeros) against a spread of
// second operands, every op, in an odd-length buffer so the vector body and the scalar tail
// both run.
void CheckSixteenBitExhaustively(DataType dtype) {
  const bool bf16 = dtype == DataType::kBFloat16;
  auto to_f = [&](uint16_t v) { return bf16 ? BFloat16ToFloat(v) : HalfToFloat(v); };
  auto from_f = [&](float f) { return bf16 ? FloatToBFloat16(f) : FloatToHalf(f); };
  const int64_t n = 65536 + 7;
  std::vector<uint16_t> a(n), b(n);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<uint16_t>(i);
  for (uint16_t shift : {0, 1, 977, 31337, 40000}) {
    for (int64_t i = 0; i < n; ++i) b[i] = static_cast<uint16_t>(i * 7 + shift);
    for (ReduceOp op : kOps) {
      std::vector<uint16_t> d(n);
      Reduce(d.data(), a.data(), b.data(), n, dtype, op);
      for (int64_t i = 0; i < n; ++i) {
        const uint16_t want = from_f(RefOp(to_f(a[i]), to_f(b[i]), op));
        ASSERT_TRUE(SameHalfResult(d[i], want, bf16))
            << DataTypeName(dtype) << " " << ReduceOpName(op) << " of 0x" << std::hex << a[i]
            << " and 0x" << b[i] << ": got 0x" << d[i] << ", want 0x" << want;
      }
    }
  }
}

TEST(ReductionTest, Float16KernelsMatchTheScalarConversionsOnEveryValue) {
  CheckSixteenBitExhaustively(DataType::kFloat16);
}

TEST(ReductionTest, BFloat16KernelsMatchTheScalarConversionsOnEveryValue) {
  CheckSixteenBitExhaustively(DataType::kBFloat16);
}

template <typename T>
void CheckTyped(DataType dtype) {
  // Lengths around every vector width, so each body/tail split is exercised.
  for (int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 1000}) {
    std::vector<T> a(n), b(n);
    for (int64_t i = 0; i < n; ++i) {
      a[i] = static_cast<T>((i * 37 + 11) % 101 - 50);
      b[i] = static_cast<T>((i * 53 + 7) % 89 - 44);
    }
    for (ReduceOp op : kOps) {
      std::vector<T> d(n), in_place = a;
      Reduce(d.data(), a.data(), b.data(), n, dtype, op);
      ReduceInto(in_place.data(), b.data(), n, dtype, op);
      for (int64_t i = 0; i < n; ++i) {
        const T want = RefOp<T>(a[i], b[i], op);
        ASSERT_EQ(d[i], want) << DataTypeName(dtype) << " " << ReduceOpName(op) << " n=" << n
                              << " i=" << i;
        ASSERT_EQ(in_place[i], want);
      }
      std::vector<T> second = b;  // the result written over the second operand
      Reduce(second.data(), a.data(), second.data(), n, dtype, op);
      ASSERT_EQ(second, d);
    }
  }
}

TEST(ReductionTest, EveryNumericTypeMatchesTheElementwiseReference) {
  CheckTyped<uint8_t>(DataType::kUInt8);
  CheckTyped<int8_t>(DataType::kInt8);
  CheckTyped<uint16_t>(DataType::kUInt16);
  CheckTyped<int16_t>(DataType::kInt16);
  CheckTyped<int32_t>(DataType::kInt32);
  CheckTyped<int64_t>(DataType::kInt64);
  CheckTyped<float>(DataType::kFloat32);
  CheckTyped<double>(DataType::kFloat64);
}

TEST(ReductionTest, FloatMinMaxKeepStdMinMaxNaNBehaviour) {
  const float nan = std::nanf("");
  float a[9] = {nan, 1, nan, 1, 1, 1, 1, 1, nan}, b[9] = {1, nan, nan, 2, 2, 2, 2, 2, 1};
  float mn[9], mx[9];
  Reduce(mn, a, b, 9, DataType::kFloat32, ReduceOp::kMin);
  Reduce(mx, a, b, 9, DataType::kFloat32, ReduceOp::kMax);
  for (int i = 0; i < 9; ++i) {
    const float want_min = std::min(a[i], b[i]), want_max = std::max(a[i], b[i]);
    EXPECT_EQ(std::isnan(mn[i]), std::isnan(want_min)) << i;
    EXPECT_EQ(std::isnan(mx[i]), std::isnan(want_max)) << i;
    if (!std::isnan(want_min)) {
      EXPECT_EQ(mn[i], want_min) << i;
    }
    if (!std::isnan(want_max)) {
      EXPECT_EQ(mx[i], want_max) << i;
    }
  }
}

TEST(ReductionTest, HalfConversionRoundTripsRepresentableValues) {
  for (float f : {0.0f, 1.0f, -2.5f, 65504.0f, 0.000061035156f, 3.140625f}) {
    EXPECT_EQ(HalfToFloat(FloatToHalf(f)), f) << f;
  }
  EXPECT_TRUE(std::isinf(HalfToFloat(FloatToHalf(1e6f))));
  EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(NAN))));
  EXPECT_FLOAT_EQ(HalfToFloat(FloatToHalf(5.96e-8f)), 5.9604645e-8f);  // smallest subnormal
}

TEST(ReductionTest, BFloat16RoundsToNearestEven) {
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(1.0f)), 1.0f);
  EXPECT_EQ(BFloat16ToFloat(FloatToBFloat16(-3.5f)), -3.5f);
  EXPECT_NEAR(BFloat16ToFloat(FloatToBFloat16(3.14159f)), 3.140625f, 1e-6);
}

TEST(ReductionTest, ReducesEveryOp) {
  int32_t a[3] = {1, 5, -2}, b[3] = {4, 2, 3};
  int32_t s[3], mn[3], mx[3], p[3];
  std::copy(a, a + 3, s);
  std::copy(a, a + 3, mn);
  std::copy(a, a + 3, mx);
  std::copy(a, a + 3, p);
  ReduceInto(s, b, 3, DataType::kInt32, ReduceOp::kSum);
  ReduceInto(mn, b, 3, DataType::kInt32, ReduceOp::kMin);
  ReduceInto(mx, b, 3, DataType::kInt32, ReduceOp::kMax);
  ReduceInto(p, b, 3, DataType::kInt32, ReduceOp::kProduct);
  EXPECT_EQ(std::vector<int32_t>(s, s + 3), (std::vector<int32_t>{5, 7, 1}));
  EXPECT_EQ(std::vector<int32_t>(mn, mn + 3), (std::vector<int32_t>{1, 2, -2}));
  EXPECT_EQ(std::vector<int32_t>(mx, mx + 3), (std::vector<int32_t>{4, 5, 3}));
  EXPECT_EQ(std::vector<int32_t>(p, p + 3), (std::vector<int32_t>{4, 10, -6}));
}

// ReduceStep's passes of up to kReduceFan inputs against Reduce and then ReduceInto of each
// further input, bit for bit, every dtype and op, 1-9 inputs, lengths around the vector widths,
// the result written over the first or the second input of the first pass too.
template <typename T>
void CheckFan(DataType dtype) {
  const size_t elem = sizeof(T);
  for (int64_t count : {1, 7, 9, 33, 1000}) {
    for (int n = 1; n <= 9; ++n) {
      std::vector<std::vector<char>> in(n, std::vector<char>(count * elem));
      for (int k = 0; k < n; ++k) {
        for (int64_t i = 0; i < count; ++i) {
          // Fractions for the floats (order-sensitive sums), small values for the integers.
          const double v = std::is_floating_point_v<T> ? ((i * 31 + k * 17) % 97 - 48) / 7.0
                                                       : (i * 31 + k * 17) % 7 - (k % 2 ? 3 : 0);
          // Integers through int64_t: a negative double converted to an unsigned type is
          // undefined (UBSan); through int64_t it wraps, as intended.
          T t;
          if constexpr (std::is_floating_point_v<T>) {
            t = static_cast<T>(v);
          } else {
            t = static_cast<T>(static_cast<int64_t>(v));
          }
          std::memcpy(in[k].data() + i * elem, &t, elem);
        }
      }
      for (ReduceOp op : kOps) {
        std::vector<char> want = in[0];
        if (n > 1) Reduce(want.data(), in[0].data(), in[1].data(), count, dtype, op);
        for (int k = 2; k < n; ++k) ReduceInto(want.data(), in[k].data(), count, dtype, op);
        for (int alias : {-1, 0, 1}) {
          if (alias >= n) continue;
          std::vector<std::vector<char>> inputs = in;
          std::vector<char> out(count * elem);
          char* dst = alias < 0 ? out.data() : inputs[alias].data();
          const void* pass[kReduceFan];
          for (int k = 0; k < n;) {
            const int m = std::min(kReduceFan, n - k);
            for (int j = 0; j < m; ++j) pass[j] = inputs[k + j].data();
            ReduceStep(dst, pass, m, count, dtype, op, k == 0);
            k += m;
          }
          ASSERT_EQ(std::memcmp(dst, want.data(), count * elem), 0)
              << DataTypeName(dtype) << " " << ReduceOpName(op) << " of " << n << " x" << count
              << (alias < 0    ? ""
                  : alias == 0 ? " over input 0"
                               : " over input 1");
        }
      }
    }
  }
}

TEST(ReductionTest, ReduceStepHasThePairwiseBitsForEveryType) {
  CheckFan<uint8_t>(DataType::kUInt8);
  CheckFan<int8_t>(DataType::kInt8);
  CheckFan<uint16_t>(DataType::kUInt16);
  CheckFan<int16_t>(DataType::kInt16);
  CheckFan<int32_t>(DataType::kInt32);
  CheckFan<int64_t>(DataType::kInt64);
  CheckFan<float>(DataType::kFloat32);
  CheckFan<double>(DataType::kFloat64);
  CheckFan<uint16_t>(DataType::kFloat16);  // the pairwise kernels in turn
  CheckFan<uint16_t>(DataType::kBFloat16);
  CheckFan<uint8_t>(DataType::kBool);
}

// The float accumulator's kernels against the scalar conversions: widening every 16-bit value
// (and combining it with a spread of others) in float, then rounding back, bit for bit.
void CheckAccumulatorExhaustively(DataType dtype) {
  const bool bf16 = dtype == DataType::kBFloat16;
  auto to_f = [&](uint16_t v) { return bf16 ? BFloat16ToFloat(v) : HalfToFloat(v); };
  auto from_f = [&](float f) { return bf16 ? FloatToBFloat16(f) : FloatToHalf(f); };
  const int64_t n = 65536 + 7;
  std::vector<uint16_t> a(n), b(n), d(n);
  std::vector<float> acc(n);
  for (int64_t i = 0; i < n; ++i) a[i] = static_cast<uint16_t>(i);
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct}) {
    for (uint16_t shift : {0, 977, 40000}) {
      for (int64_t i = 0; i < n; ++i) b[i] = static_cast<uint16_t>(i * 7 + shift);
      const void* in_a[1] = {a.data()};
      const void* in_b[1] = {b.data()};
      AccumulateStep(acc.data(), nullptr, in_a, 1, n, dtype, op, /*first=*/true);
      AccumulateStep(acc.data(), nullptr, in_b, 1, n, dtype, op, /*first=*/false);
      for (int64_t i = 0; i < n; ++i) {
        const float x = to_f(a[i]), y = to_f(b[i]);
        const float want = op == ReduceOp::kSum ? x + y : x * y;
        ASSERT_TRUE(std::memcmp(&acc[i], &want, sizeof(want)) == 0 ||
                    (std::isnan(acc[i]) && std::isnan(want)))
            << DataTypeName(dtype) << " " << ReduceOpName(op) << " of 0x" << std::hex << a[i]
            << " and 0x" << b[i] << ": got " << acc[i] << ", want " << want;
      }
      AccumulateStep(acc.data(), d.data(), nullptr, 0, n, dtype, op, false);
      for (int64_t i = 0; i < n; ++i) {
        ASSERT_TRUE(SameHalfResult(d[i], from_f(acc[i]), bf16))
            << DataTypeName(dtype) << " rounding " << acc[i] << ": got 0x" << std::hex << d[i]
            << ", want 0x" << from_f(acc[i]);
      }
    }
  }
  // Floats between the 16-bit values, ties included: the rounding on its own.
  for (int64_t i = 0; i < n; ++i) {
    uint32_t bits = static_cast<uint32_t>(i) * 0x9e3779b1u;
    std::memcpy(&acc[i], &bits, sizeof(bits));
    if (i % 3 == 0) acc[i] = (to_f(a[i]) + to_f(static_cast<uint16_t>(a[i] + 1))) / 2;  // a tie
  }
  AccumulateStep(acc.data(), d.data(), nullptr, 0, n, dtype, ReduceOp::kSum, false);
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_TRUE(SameHalfResult(d[i], from_f(acc[i]), bf16))
        << DataTypeName(dtype) << " rounding " << acc[i] << ": got 0x" << std::hex << d[i];
  }
}

TEST(ReductionTest, Float16AccumulatorMatchesTheScalarConversionsOnEveryValue) {
  CheckAccumulatorExhaustively(DataType::kFloat16);
}

TEST(ReductionTest, BFloat16AccumulatorMatchesTheScalarConversionsOnEveryValue) {
  CheckAccumulatorExhaustively(DataType::kBFloat16);
}

TEST(ReductionTest, OnlySixteenBitSumsAndProductsAccumulateInFloat) {
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    EXPECT_TRUE(AccumulatesInFloat(dtype, ReduceOp::kSum));
    EXPECT_TRUE(AccumulatesInFloat(dtype, ReduceOp::kAverage));
    EXPECT_TRUE(AccumulatesInFloat(dtype, ReduceOp::kProduct));
    EXPECT_FALSE(AccumulatesInFloat(dtype, ReduceOp::kMin));
    EXPECT_FALSE(AccumulatesInFloat(dtype, ReduceOp::kMax));
  }
  EXPECT_FALSE(AccumulatesInFloat(DataType::kFloat32, ReduceOp::kSum));
  EXPECT_FALSE(AccumulatesInFloat(DataType::kInt16, ReduceOp::kSum));
}

// ReduceWide over several blocks and a tail, against one float accumulation per element in
// rank order, with the result written over one of its inputs.
TEST(ReductionTest, ReduceWideAccumulatesEveryInputInFloatAndRoundsOnce) {
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    const bool bf16 = dtype == DataType::kBFloat16;
    auto to_f = [&](uint16_t v) { return bf16 ? BFloat16ToFloat(v) : HalfToFloat(v); };
    auto from_f = [&](float f) { return bf16 ? FloatToBFloat16(f) : FloatToHalf(f); };
    const int64_t count = 2 * kWideBlock + 13;
    for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9}) {
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kProduct}) {
        std::vector<std::vector<uint16_t>> in(n, std::vector<uint16_t>(count));
        for (int k = 0; k < n; ++k) {
          for (int64_t i = 0; i < count; ++i) {
            in[k][i] = from_f(static_cast<float>((i * 31 + k * 17) % 97 - 48) / 7.0f);
          }
        }
        std::vector<uint16_t> want(count);
        for (int64_t i = 0; i < count; ++i) {
          float acc = to_f(in[0][i]);
          for (int k = 1; k < n; ++k)
            acc = op == ReduceOp::kSum ? acc + to_f(in[k][i]) : acc * to_f(in[k][i]);
          want[i] = from_f(acc);
        }
        std::vector<uint16_t> out(count);
        ReduceWide(out.data(), n, count, dtype, op, [&](int k) { return in[k].data(); });
        EXPECT_EQ(out, want) << DataTypeName(dtype) << " " << ReduceOpName(op) << " of " << n;
        if (n == 2) {  // one rounding either way: the pairwise kernel's bits
          std::vector<uint16_t> pairwise(count);
          Reduce(pairwise.data(), in[0].data(), in[1].data(), count, dtype, op);
          EXPECT_EQ(out, pairwise);
        }
        const int last = n - 1;  // in place, over the last input
        ReduceWide(in[last].data(), n, count, dtype, op, [&](int k) { return in[k].data(); });
        EXPECT_EQ(in[last], want) << DataTypeName(dtype) << " " << ReduceOpName(op) << " in place";
      }
    }
  }
}

// What accumulating in float changes: small addends are not lost against a large one (each
// pairwise step rounds 256 + 1 back to 256 in bfloat16), and a partial sum past float16's range
// does not overflow a total that fits.
TEST(ReductionTest, ReduceWideKeepsWhatPairwiseRoundingLoses) {
  std::vector<uint16_t> big = {FloatToBFloat16(256.0f)}, one = {FloatToBFloat16(1.0f)};
  std::vector<const uint16_t*> bf = {big.data()};
  for (int k = 0; k < 15; ++k) bf.push_back(one.data());
  uint16_t pairwise = big[0], wide = 0;
  for (int k = 1; k < 16; ++k) ReduceInto(&pairwise, bf[k], 1, DataType::kBFloat16, ReduceOp::kSum);
  ReduceWide(&wide, 16, 1, DataType::kBFloat16, ReduceOp::kSum, [&](int k) { return bf[k]; });
  EXPECT_EQ(BFloat16ToFloat(pairwise), 256.0f);
  EXPECT_EQ(BFloat16ToFloat(wide), 272.0f);  // 271 rounded to bfloat16

  const uint16_t h[3] = {FloatToHalf(40000.0f), FloatToHalf(40000.0f), FloatToHalf(-40000.0f)};
  uint16_t half_pairwise = h[0], half_wide = 0;
  ReduceInto(&half_pairwise, &h[1], 1, DataType::kFloat16, ReduceOp::kSum);
  ReduceInto(&half_pairwise, &h[2], 1, DataType::kFloat16, ReduceOp::kSum);
  ReduceWide(&half_wide, 3, 1, DataType::kFloat16, ReduceOp::kSum, [&](int k) { return &h[k]; });
  EXPECT_TRUE(std::isinf(HalfToFloat(half_pairwise)));
  EXPECT_EQ(HalfToFloat(half_wide), 40000.0f);
}

// With a scale (Average's 1/n, a postscale): every 16-bit input accumulated in float, the sum
// scaled in float and rounded once, over blocks and a tail, 1-9 inputs (two included: the scaled
// pair takes the accumulator, not Reduce), in place too.
TEST(ReductionTest, ReduceWideScalesInFloatBeforeItsOneRounding) {
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    const bool bf16 = dtype == DataType::kBFloat16;
    auto to_f = [&](uint16_t v) { return bf16 ? BFloat16ToFloat(v) : HalfToFloat(v); };
    auto from_f = [&](float f) { return bf16 ? FloatToBFloat16(f) : FloatToHalf(f); };
    const int64_t count = kWideBlock + 29;
    for (int n = 1; n <= 9; ++n) {
      const double scale = 1.0 / n;
      std::vector<std::vector<uint16_t>> in(n, std::vector<uint16_t>(count));
      for (int k = 0; k < n; ++k) {
        for (int64_t i = 0; i < count; ++i) {
          in[k][i] = from_f(static_cast<float>((i * 13 + k * 29) % 89 - 44) / 3.0f);
        }
      }
      std::vector<uint16_t> want(count);
      for (int64_t i = 0; i < count; ++i) {
        float acc = to_f(in[0][i]);
        for (int k = 1; k < n; ++k) acc += to_f(in[k][i]);
        want[i] = from_f(acc * static_cast<float>(scale));
      }
      std::vector<uint16_t> out(count);
      auto input = [&](int k) { return in[k].data(); };
      if (n == 1) {  // ReduceHeldInputs copies one input and scales it: the same bits
        std::copy(in[0].begin(), in[0].end(), out.begin());
        ScaleBuffer(out.data(), count, dtype, scale);
      } else {
        ReduceWide(out.data(), n, count, dtype, ReduceOp::kSum, input, scale);
      }
      EXPECT_EQ(out, want) << DataTypeName(dtype) << " mean of " << n;
      if (n > 1) {
        ReduceWide(in[n - 1].data(), n, count, dtype, ReduceOp::kSum, input, scale);
        EXPECT_EQ(in[n - 1], want) << DataTypeName(dtype) << " mean of " << n << " in place";
      }
    }
  }
}

// What scaling before the rounding changes: the mean of two float16 40000s is 40000, where the
// sum rounded first is inf (and inf / 2 is inf) -- Average of large float16 gradients.
TEST(ReductionTest, ReduceWideMeanOfSixteenBitFloatsDoesNotOverflowWithTheSum) {
  const uint16_t h[2] = {FloatToHalf(40000.0f), FloatToHalf(40000.0f)};
  uint16_t sum_then_scale = 0, mean = 0;
  Reduce(&sum_then_scale, &h[0], &h[1], 1, DataType::kFloat16, ReduceOp::kSum);
  ScaleBuffer(&sum_then_scale, 1, DataType::kFloat16, 0.5);
  ReduceWide(
      &mean, 2, 1, DataType::kFloat16, ReduceOp::kSum, [&](int k) { return &h[k]; }, 0.5);
  EXPECT_TRUE(std::isinf(HalfToFloat(sum_then_scale)));
  EXPECT_EQ(HalfToFloat(mean), 40000.0f);
}

// ScaleBuffer's vector loops against the scalar conversions on every 16-bit pattern, for
// factors that round (1/3, 1/7), halve, grow past the range (3, 1e5) and shrink to subnormals,
// in an odd-length buffer (vector body and scalar tail).
TEST(ReductionTest, SixteenBitScalingMatchesTheScalarConversionsOnEveryValue) {
  for (DataType dtype : {DataType::kFloat16, DataType::kBFloat16}) {
    const bool bf16 = dtype == DataType::kBFloat16;
    auto to_f = [&](uint16_t v) { return bf16 ? BFloat16ToFloat(v) : HalfToFloat(v); };
    auto from_f = [&](float f) { return bf16 ? FloatToBFloat16(f) : FloatToHalf(f); };
    const int64_t n = 65536 + 5;
    for (double factor : {1.0 / 3, 1.0 / 7, 0.5, 3.0, 1e5, 1e-6}) {
      std::vector<uint16_t> b(n);
      for (int64_t i = 0; i < n; ++i) b[i] = static_cast<uint16_t>(i);
      ScaleBuffer(b.data(), n, dtype, factor);
      for (int64_t i = 0; i < n; ++i) {
        const auto x = static_cast<uint16_t>(i);
        const uint16_t want = from_f(to_f(x) * static_cast<float>(factor));
        ASSERT_TRUE(SameHalfResult(b[i], want, bf16))
            << DataTypeName(dtype) << " 0x" << std::hex << x << " * " << factor << ": got 0x"
            << b[i] << ", want 0x" << want;
      }
    }
  }
}

TEST(ReductionTest, ScalesSixteenBitFloatsInFloat) {
  uint16_t h[2] = {FloatToHalf(3.0f), FloatToHalf(-1.0f)};
  ScaleBuffer(h, 2, DataType::kFloat16, 0.5);
  EXPECT_EQ(HalfToFloat(h[0]), 1.5f);
  EXPECT_EQ(HalfToFloat(h[1]), -0.5f);
}

}  // namespace
}  // namespace hvd::runtime
