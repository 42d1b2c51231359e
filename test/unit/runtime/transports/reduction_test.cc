#include "runtime/transports/reduction.h"

#include <gtest/gtest.h>

#include <cmath>

namespace hvd::runtime {
namespace {

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

TEST(ReductionTest, ScalesSixteenBitFloatsInFloat) {
  uint16_t h[2] = {FloatToHalf(3.0f), FloatToHalf(-1.0f)};
  ScaleBuffer(h, 2, DataType::kFloat16, 0.5);
  EXPECT_EQ(HalfToFloat(h[0]), 1.5f);
  EXPECT_EQ(HalfToFloat(h[1]), -0.5f);
}

}  // namespace
}  // namespace hvd::runtime
