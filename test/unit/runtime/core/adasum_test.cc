// Adasum (runtime/core/execution/adasum.h): the pair arithmetic, and the sliced collective on
// members that are threads (InProcessWorld) against the tree computed here in double from the
// formula.
#include "runtime/core/execution/adasum.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "runtime/transports/reduction.h"
#include "test/fakes/in_process_communicator.h"

namespace hvd::runtime {
namespace {

using Vec = std::vector<double>;

Vec Pair(const Vec& a, const Vec& b) {
  double dot = 0, an = 0, bn = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    dot += a[i] * b[i];
    an += a[i] * a[i];
    bn += b[i] * b[i];
  }
  const double ac = an >= 1e-8 ? 1 - dot / (2 * an) : 1, bc = bn >= 1e-8 ? 1 - dot / (2 * bn) : 1;
  Vec out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = ac * a[i] + bc * b[i];
  return out;
}

// The documented order: distance 1, 2, 4, ...; the last of an odd count carried up.
Vec Tree(std::vector<Vec> v) {
  const size_t n = v.size();
  for (size_t d = 1; d < n; d *= 2) {
    for (size_t k = 0; k + d < n; k += 2 * d) v[k] = Pair(v[k], v[k + d]);
  }
  return v[0];
}

double Value(int rank, int64_t i) {
  return std::sin(0.7 * static_cast<double>(i) * (rank + 1) + rank);
}

// Stores `v` as `dtype` at `at`; returns the value as stored.
double Store(DataType dtype, double v, char* at) {
  switch (dtype) {
    case DataType::kFloat32: {
      const float f = static_cast<float>(v);
      std::memcpy(at, &f, 4);
      return f;
    }
    case DataType::kFloat64:
      std::memcpy(at, &v, 8);
      return v;
    default: {
      const bool bf = dtype == DataType::kBFloat16;
      const uint16_t h =
          bf ? FloatToBFloat16(static_cast<float>(v)) : FloatToHalf(static_cast<float>(v));
      std::memcpy(at, &h, 2);
      return bf ? BFloat16ToFloat(h) : HalfToFloat(h);
    }
  }
}

double Load(DataType dtype, const char* at) {
  switch (dtype) {
    case DataType::kFloat32: {
      float f;
      std::memcpy(&f, at, 4);
      return f;
    }
    case DataType::kFloat64: {
      double d;
      std::memcpy(&d, at, 8);
      return d;
    }
    default: {
      uint16_t h;
      std::memcpy(&h, at, 2);
      return dtype == DataType::kBFloat16 ? BFloat16ToFloat(h) : HalfToFloat(h);
    }
  }
}

TEST(AdasumTest, OrthogonalVectorsAddEqualOnesStayZerosAreLeftOut) {
  auto combine = [](std::vector<double> a, const std::vector<double>& b) {
    double sums[3] = {};
    AdasumSums(a.data(), b.data(), static_cast<int64_t>(a.size()), sums);
    AdasumCombine<double>(a.data(), b.data(), static_cast<int64_t>(a.size()), sums);
    return a;
  };
  EXPECT_EQ(combine({1, 0, 0}, {0, 2, 0}), (Vec{1, 2, 0}));
  EXPECT_EQ(combine({3, -1}, {3, -1}), (Vec{3, -1}));
  EXPECT_EQ(combine({0, 0}, {5, 6}), (Vec{5, 6}));
  EXPECT_EQ(combine({5, 6}, {0, 0}), (Vec{5, 6}));
  const Vec got = combine({2, 4}, {1, 2}), want = Pair({2, 4}, {1, 2});
  EXPECT_DOUBLE_EQ(got[0], want[0]);
  EXPECT_DOUBLE_EQ(got[1], want[1]);
  // Long enough for the eight-lane sums and a tail.
  Vec a(1003), b(1003);
  for (int i = 0; i < 1003; ++i) a[i] = Value(0, i), b[i] = Value(1, i);
  const Vec long_got = combine(a, b), long_want = Pair(a, b);
  for (int i = 0; i < 1003; ++i) EXPECT_NEAR(long_got[i], long_want[i], 1e-12);
}

struct Case {
  int ranks;
  std::vector<int64_t> counts;
  DataType dtype;
};

// Runs AdasumAllreduce on `c.ranks` threads; checks every member's result against Tree() per
// tensor and that all members' results are bit-identical.
void RunCase(const Case& c) {
  hvd::testing::InProcessWorld world;
  const std::string scope = "adasum-" + std::to_string(c.ranks) + "-" + DataTypeName(c.dtype) +
                            "-" + std::to_string(c.counts.size());
  int64_t total = 0;
  for (int64_t n : c.counts) total += n;
  const size_t elem = DataTypeSize(c.dtype);
  std::vector<std::vector<char>> inputs(c.ranks, std::vector<char>(total * elem));
  std::vector<std::vector<double>> stored(c.ranks);
  for (int r = 0; r < c.ranks; ++r) {
    for (int64_t i = 0; i < total; ++i) {
      // Rank 1's second tensor is zero: left out of the combination.
      const bool zero =
          r == 1 && c.counts.size() > 1 && i >= c.counts[0] && i < c.counts[0] + c.counts[1];
      stored[r].push_back(Store(c.dtype, zero ? 0.0 : Value(r, i), inputs[r].data() + i * elem));
    }
  }
  std::vector<std::vector<char>> outputs(c.ranks, std::vector<char>(total * elem));
  std::vector<Status> status(c.ranks);
  std::vector<std::thread> threads;
  for (int r = 0; r < c.ranks; ++r) {
    threads.emplace_back([&, r] {
      auto comm = world.Join(scope, r, c.ranks);
      AdasumScratch scratch;
      status[r] = AdasumAllreduce(comm.get(), inputs[r].data(), outputs[r].data(), c.counts,
                                  c.dtype, &scratch);
      // Again with the same scratch: a repeated op gives the same result.
      std::vector<char> again(total * elem);
      if (status[r].ok()) {
        status[r] = AdasumAllreduce(comm.get(), inputs[r].data(), again.data(), c.counts, c.dtype,
                                    &scratch);
      }
      if (status[r].ok() && again != outputs[r]) status[r] = Status::Internal("repeat differs");
    });
  }
  for (auto& t : threads) t.join();
  const double tol = c.dtype == DataType::kFloat64   ? 1e-12
                     : c.dtype == DataType::kFloat32 ? 2e-5
                     : c.dtype == DataType::kFloat16 ? 5e-3
                                                     : 3e-2;
  int64_t offset = 0;
  for (int64_t count : c.counts) {
    std::vector<Vec> per_rank(c.ranks);
    for (int r = 0; r < c.ranks; ++r) {
      per_rank[r].assign(stored[r].begin() + offset, stored[r].begin() + offset + count);
    }
    const Vec want = Tree(per_rank);
    for (int64_t i = 0; i < count; ++i) {
      const double got = Load(c.dtype, outputs[0].data() + (offset + i) * elem);
      ASSERT_NEAR(got, want[i], tol * (1 + std::abs(want[i])))
          << c.ranks << " ranks, " << DataTypeName(c.dtype) << ", tensor at " << offset
          << ", element " << i;
    }
    offset += count;
  }
  for (int r = 0; r < c.ranks; ++r) {
    ASSERT_TRUE(status[r].ok()) << "rank " << r << ": " << status[r].message();
    EXPECT_EQ(outputs[r], outputs[0]) << "rank " << r << "'s result differs from rank 0's";
  }
}

TEST(AdasumTest, EveryMemberGetsTheTreeOfEveryTensorForAnyRankCount) {
  for (int ranks : {1, 2, 3, 4, 5, 8}) {
    RunCase({ranks, {5, 1000, 3}, DataType::kFloat32});
    RunCase({ranks, {37}, DataType::kFloat64});
  }
}

TEST(AdasumTest, HalfPrecisionCombinesInFloat) {
  RunCase({3, {17, 40}, DataType::kFloat16});
  RunCase({4, {17, 40}, DataType::kBFloat16});
}

TEST(AdasumTest, FewerElementsThanMembersLeavesSomeSlicesEmpty) {
  RunCase({5, {2}, DataType::kFloat32});
  RunCase({4, {1, 1}, DataType::kFloat64});
  RunCase({3, {0}, DataType::kFloat32});  // an empty tensor: nothing to exchange
  RunCase({3, {0, 4, 0}, DataType::kFloat32});
}

TEST(AdasumTest, IntegerTensorsAreRefused) {
  hvd::testing::InProcessWorld world;
  auto comm = world.Join("adasum-int", 0, 1);
  AdasumScratch scratch;
  int32_t v = 1, out = 0;
  const int64_t counts[] = {1};
  const Status s = AdasumAllreduce(comm.get(), &v, &out, counts, DataType::kInt32, &scratch);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("Adasum of int32"), std::string::npos) << s.message();
  EXPECT_FALSE(AdasumSupports(DataType::kInt32));
  EXPECT_TRUE(AdasumSupports(DataType::kBFloat16));
}

}  // namespace
}  // namespace hvd::runtime
