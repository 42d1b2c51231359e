// Every collective with 2-4 thread-ranks on the in-process communicator, checked against
// values computed independently here.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

#include "runtime/transports/reduction.h"
#include "test/unit/runtime/core/rank_harness.h"

namespace hvd::testing {
namespace {

using runtime::DataType;
using runtime::ReduceOp;

bool IsInteger(DataType dt) {
  return dt != DataType::kFloat16 && dt != DataType::kFloat32 && dt != DataType::kFloat64 &&
         dt != DataType::kBFloat16;
}

double Value(int rank, int64_t i) { return 1 + rank + (i % 2); }

double Expected(ReduceOp op, int size, int64_t i, DataType dt) {
  double acc = Value(0, i);
  for (int r = 1; r < size; ++r) {
    double v = Value(r, i);
    if (op == ReduceOp::kMin)
      acc = std::min(acc, v);
    else if (op == ReduceOp::kMax)
      acc = std::max(acc, v);
    else if (op == ReduceOp::kProduct)
      acc *= v;
    else
      acc += v;
  }
  if (op == ReduceOp::kAverage) {
    acc = acc * (1.0 / size);
    if (IsInteger(dt)) acc = std::trunc(acc);
  }
  return acc;
}

const DataType kDtypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kUInt16,
                            DataType::kInt16,   DataType::kInt32,   DataType::kInt64,
                            DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                            DataType::kBFloat16};
const ReduceOp kOps[] = {ReduceOp::kSum, ReduceOp::kAverage, ReduceOp::kMin, ReduceOp::kMax,
                         ReduceOp::kProduct};

TEST(CollectivesTest, AllreduceEveryDtypeAndOpOnThreeRanks) {
  constexpr int kSize = 3;
  constexpr int64_t kN = 5;
  RunRanks(kSize, [&](int rank, runtime::Runtime& rt) {
    for (DataType dt : kDtypes) {
      for (ReduceOp op : kOps) {
        std::vector<char> in(kN * runtime::DataTypeSize(dt)), out(in.size());
        for (int64_t i = 0; i < kN; ++i) Set(in.data(), dt, i, Value(rank, i));
        runtime::OpOptions o;
        o.name = std::string("ar.") + runtime::DataTypeName(dt) + "." + runtime::ReduceOpName(op);
        o.reduce_op = op;
        auto h = rt.EnqueueAllreduce({Spec(in.data(), dt, {kN})}, {Spec(out.data(), dt, {kN})}, o,
                                     false);
        ASSERT_TRUE(h.ok()) << h.status().ToString();
        ASSERT_TRUE(WaitAndRelease(rt, *h).ok()) << o.name;
        for (int64_t i = 0; i < kN; ++i) {
          double want = Expected(op, kSize, i, dt);
          EXPECT_NEAR(At(out.data(), dt, i), want, IsInteger(dt) ? 0 : 0.02 * std::abs(want))
              << o.name << " element " << i;
        }
      }
    }
  });
}

TEST(CollectivesTest, PrescaleAndPostscaleApplyAroundTheSum) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    std::vector<float> in = {1, 2}, out(2);
    runtime::OpOptions o;
    o.name = "scaled";
    o.prescale = 2.0;
    o.postscale = 3.0;
    auto h = rt.EnqueueAllreduce({Spec(in.data(), DataType::kFloat32, {2})},
                                 {Spec(out.data(), DataType::kFloat32, {2})}, o, false);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
    EXPECT_EQ(out, (std::vector<float>{12, 24}));
  });
}

TEST(CollectivesTest, InPlaceAllreduceRepeatsThroughTheCache) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    for (int step = 0; step < 20; ++step) {
      std::vector<double> buf = {static_cast<double>(rank + step)};
      runtime::OpOptions o;
      o.name = "grad";
      auto spec = Spec(buf.data(), DataType::kFloat64, {1});
      auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
      ASSERT_TRUE(h.ok());
      ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
      EXPECT_EQ(buf[0], 2 * step + 1);
    }
  });
}

TEST(CollectivesTest, AllgatherWithDifferentFirstDimensions) {
  constexpr int kSize = 3;
  RunRanks(kSize, [&](int rank, runtime::Runtime& rt) {
    for (DataType dt : {DataType::kFloat32, DataType::kInt64, DataType::kUInt8}) {
      const int64_t rows = rank + 1;
      std::vector<char> in(rows * 2 * runtime::DataTypeSize(dt));
      for (int64_t i = 0; i < rows * 2; ++i) Set(in.data(), dt, i, rank * 10 + i);
      runtime::OpOptions o;
      o.name = std::string("ag.") + runtime::DataTypeName(dt);
      auto h = rt.EnqueueAllgather({Spec(in.data(), dt, {rows, 2})}, o, false);
      ASSERT_TRUE(h.ok());
      ASSERT_TRUE(rt.handles().Wait(*h, std::chrono::seconds(30)).ok());
      auto out = rt.handles().TakeOutput(*h, 0);
      ASSERT_TRUE(out.ok());
      EXPECT_EQ(out->shape.ToVector(), (std::vector<int64_t>{6, 2}));
      int64_t k = 0;
      for (int r = 0; r < kSize; ++r) {
        for (int64_t i = 0; i < (r + 1) * 2; ++i) EXPECT_EQ(At(out->data, dt, k++), r * 10 + i);
      }
      runtime::FreeOutput(out->data);
      ASSERT_TRUE(rt.ReleaseHandle(*h).ok());
    }
  });
}

// `count` allgathers: float32 but every fifth int64 (so two fused responses, by look-ahead),
// 1 to 4 columns, and 0 to 2 rows that differ by rank and tensor (some ranks send none).
std::vector<GatherCase> ManyGathers(const std::string& prefix, int count) {
  std::vector<GatherCase> cases;
  for (int t = 0; t < count; ++t) {
    GatherCase c;
    c.name = prefix + "." + std::to_string(t);
    c.dtype = t % 5 == 4 ? DataType::kInt64 : DataType::kFloat32;
    c.cols = t % 4 + 1;
    c.rows = [t](int r) -> int64_t { return (r + t) % 3; };
    cases.push_back(std::move(c));
  }
  return cases;
}

TEST(CollectivesTest, ManyAllgathersEnqueuedTogetherFuseAndRepeatThroughTheCache) {
  for (int size : {2, 3}) {
    // Given `size` ranks, each enqueueing 20 allgathers at once, four steps in a row (steps
    // after the first are common cache hits, fused on every rank without rank 0)
    std::vector<int64_t> allocations(size);
    RunRanks(
        size,
        [&](int rank, runtime::Runtime& rt) {
          for (int step = 0; step < 4; ++step) {
            // Then every output holds every rank's rows in rank order
            AllgatherAndCheck(rt, rank, size, ManyGathers("many", 20));
          }
          allocations[rank] = rt.fusion_allocations();
        },
        [](runtime::RuntimeConfig* c) {
          c->cycle_time = std::chrono::milliseconds(5);  // the batch lands in one cycle
          c->fusion_threshold_bytes = 1 << 20;
        });
    // And they ran fused through the fusion buffer, which was allocated once
    for (int r = 0; r < size; ++r) EXPECT_EQ(allocations[r], 1) << "rank " << r << " of " << size;
  }
}

TEST(CollectivesTest, FusedAllgathersSplitAtTheThreshold) {
  // Given a 64-byte threshold, five float32 allgathers of 48 gathered bytes (1 + 2 + 3 rows of
  // 2) that cannot pair up and five int32 ones of 24 bytes (a row of 2 per rank) that fuse at
  // most two at a time, three steps on 3 ranks
  std::vector<GatherCase> cases;
  for (int t = 0; t < 10; ++t) {
    GatherCase c;
    c.name = "split." + std::to_string(t);
    c.dtype = t < 5 ? DataType::kFloat32 : DataType::kInt32;
    c.cols = 2;
    c.rows = [t](int r) -> int64_t { return t < 5 ? r + 1 : 1; };
    cases.push_back(std::move(c));
  }
  RunRanks(
      3,
      [&](int rank, runtime::Runtime& rt) {
        // Then every output is correct
        for (int step = 0; step < 3; ++step) AllgatherAndCheck(rt, rank, 3, cases);
      },
      [](runtime::RuntimeConfig* c) {
        c->cycle_time = std::chrono::milliseconds(5);
        c->fusion_threshold_bytes = 64;
      });
}

TEST(CollectivesTest, GroupedAllgatherOfOneDtypeIsOneFusedGather) {
  // Given a grouped allgather of three float64 members with rank-dependent rows (one empty on
  // rank 0), on 3 ranks, three times (the second and third through the cache)
  std::vector<GatherCase> cases(3);
  cases[0] = {"grouped.ag", DataType::kFloat64, 2, [](int r) -> int64_t { return r + 1; }};
  cases[1] = {"grouped.ag.1", DataType::kFloat64, 1, [](int r) -> int64_t { return r; }};
  cases[2] = {"grouped.ag.2", DataType::kFloat64, 3, [](int) -> int64_t { return 2; }};
  std::vector<int64_t> allocations(3);
  RunRanks(3, [&](int rank, runtime::Runtime& rt) {
    // Then each member's output is correct
    for (int step = 0; step < 3; ++step) AllgatherAndCheck(rt, rank, 3, cases, true);
    allocations[rank] = rt.fusion_allocations();
  });
  // And the group always ran as one gather through the fusion buffer
  for (int r = 0; r < 3; ++r) EXPECT_EQ(allocations[r], 1) << "rank " << r;
}

TEST(CollectivesTest, BroadcastFromAnyRoot) {
  RunRanks(3, [](int rank, runtime::Runtime& rt) {
    for (int root = 0; root < 3; ++root) {
      std::vector<int32_t> in = {rank * 7, rank * 7 + 1, rank * 7 + 2}, out(3, -1);
      runtime::OpOptions o;
      o.name = "bcast." + std::to_string(root);
      o.root_rank = root;
      auto h = rt.EnqueueBroadcast(Spec(in.data(), DataType::kInt32, {3}),
                                   Spec(out.data(), DataType::kInt32, {3}), o);
      ASSERT_TRUE(h.ok());
      ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
      EXPECT_EQ(out, (std::vector<int32_t>{root * 7, root * 7 + 1, root * 7 + 2}));
    }
  });
}

TEST(CollectivesTest, AlltoallEqualAndExplicitSplits) {
  constexpr int kSize = 3;
  RunRanks(kSize, [&](int rank, runtime::Runtime& rt) {
    // Equal split: 3 rows, row j goes to rank j.
    std::vector<float> in = {rank * 10.0f, rank * 10.0f + 1, rank * 10.0f + 2};
    runtime::OpOptions o;
    o.name = "a2a.equal";
    auto h = rt.EnqueueAlltoall(Spec(in.data(), DataType::kFloat32, {3}), o);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(rt.handles().Wait(*h, std::chrono::seconds(30)).ok());
    auto out = rt.handles().TakeOutput(*h, 0);
    ASSERT_TRUE(out.ok());
    const float* got = static_cast<const float*>(out->data);
    for (int r = 0; r < kSize; ++r) EXPECT_EQ(got[r], r * 10.0f + rank);
    runtime::FreeOutput(out->data);
    ASSERT_TRUE(rt.ReleaseHandle(*h).ok());

    // Explicit splits: rank r sends (j + 1) rows to rank j; rows of 2 int64.
    std::vector<int64_t> rows_in(2 * 6);
    for (size_t i = 0; i < rows_in.size(); ++i) rows_in[i] = rank * 100 + static_cast<int64_t>(i);
    runtime::OpOptions s;
    s.name = "a2a.splits";
    s.has_splits = true;
    s.splits = {1, 2, 3};
    h = rt.EnqueueAlltoall(Spec(rows_in.data(), DataType::kInt64, {6, 2}), s);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(rt.handles().Wait(*h, std::chrono::seconds(30)).ok());
    auto splits = rt.handles().ReceivedSplits(*h);
    ASSERT_TRUE(splits.ok());
    EXPECT_EQ(*splits, (std::vector<int32_t>(kSize, rank + 1)));
    out = rt.handles().TakeOutput(*h, 0);
    ASSERT_TRUE(out.ok());
    EXPECT_EQ(out->shape.ToVector(), (std::vector<int64_t>{3 * (rank + 1), 2}));
    const int64_t* rows = static_cast<const int64_t*>(out->data);
    const int64_t first_row = rank * (rank + 1) / 2;  // rows sent to lower ranks come first
    EXPECT_EQ(rows[0], 0 * 100 + first_row * 2);
    EXPECT_EQ(rows[2 * (rank + 1)], 1 * 100 + first_row * 2);
    runtime::FreeOutput(out->data);
    ASSERT_TRUE(rt.ReleaseHandle(*h).ok());
  });
}

TEST(CollectivesTest, AlltoallSplitsThatChangeUnderTheResponseCache) {
  // Given 3 ranks repeating one named alltoall whose dims 0 differ by rank (3, 6, 9 rows),
  // split evenly by every rank — except at step 3, where rank 1 gives explicit splits for the
  // same shape. Responses of even steps carry the members' dims 0 and skip the split
  // exchange, so a cache hit must not survive rank 1's switch (a stale "even" response would
  // send it 2 rows per rank instead of 4, 0, 2).
  constexpr int kSize = 3;
  RunRanks(kSize, [&](int rank, runtime::Runtime& rt) {
    for (int step = 0; step < 6; ++step) {
      const bool explicit_step = step == 3;
      auto sends = [&](int from, int to) -> int64_t {
        if (explicit_step && from == 1) return std::vector<int64_t>{4, 0, 2}[to];
        return from + 1;  // 3 (from + 1) rows split evenly over 3 ranks
      };
      std::vector<float> in(3 * (rank + 1));
      for (size_t k = 0; k < in.size(); ++k) in[k] = step * 1000.0f + rank * 100.0f + k;
      runtime::OpOptions o;
      o.name = "a2a.changing";
      if (explicit_step && rank == 1) {
        o.has_splits = true;
        o.splits = {4, 0, 2};
      }
      auto h = rt.EnqueueAlltoall(
          Spec(in.data(), DataType::kFloat32, {static_cast<int64_t>(in.size())}), o);
      ASSERT_TRUE(h.ok());
      ASSERT_TRUE(rt.handles().Wait(*h, std::chrono::seconds(30)).ok()) << "step " << step;
      auto splits = rt.handles().ReceivedSplits(*h);
      ASSERT_TRUE(splits.ok());
      const std::vector<int32_t>& received = *splits;
      auto out = rt.handles().TakeOutput(*h, 0);
      ASSERT_TRUE(out.ok());
      const float* got = static_cast<const float*>(out->data);
      int64_t at = 0;
      for (int from = 0; from < kSize; ++from) {
        EXPECT_EQ(received[from], sends(from, rank)) << "step " << step << " from " << from;
        int64_t first = 0;  // the sender's rows for lower ranks come first
        for (int to = 0; to < rank; ++to) first += sends(from, to);
        for (int64_t k = 0; k < sends(from, rank); ++k, ++at) {
          ASSERT_EQ(got[at], step * 1000.0f + from * 100.0f + (first + k))
              << "step " << step << " from " << from << " row " << k;
        }
      }
      EXPECT_EQ(out->shape[0], at) << "step " << step;
      runtime::FreeOutput(out->data);
      ASSERT_TRUE(rt.ReleaseHandle(*h).ok());
    }
  });
}

TEST(CollectivesTest, ReducescatterUnevenRowsSumAndAverage) {
  constexpr int kSize = 3;
  RunRanks(kSize, [&](int rank, runtime::Runtime& rt) {
    for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
      // 5 rows of 2: ranks 0 and 1 get 2 rows, rank 2 gets 1.
      std::vector<float> in(10);
      for (int i = 0; i < 10; ++i) in[i] = static_cast<float>(i + rank);
      runtime::OpOptions o;
      o.name = std::string("rs.") + runtime::ReduceOpName(op);
      o.reduce_op = op;
      auto h = rt.EnqueueReducescatter({Spec(in.data(), DataType::kFloat32, {5, 2})}, o, false);
      ASSERT_TRUE(h.ok());
      ASSERT_TRUE(rt.handles().Wait(*h, std::chrono::seconds(30)).ok());
      auto out = rt.handles().TakeOutput(*h, 0);
      ASSERT_TRUE(out.ok());
      const int64_t my_rows = rank < 2 ? 2 : 1;
      EXPECT_EQ(out->shape.ToVector(), (std::vector<int64_t>{my_rows, 2}));
      const int64_t first = rank * 2 * 2;
      for (int64_t i = 0; i < my_rows * 2; ++i) {
        double sum = 3.0 * (first + i) + 3.0;  // sum over ranks of (index + rank)
        double want = op == ReduceOp::kAverage ? sum / 3 : sum;
        EXPECT_NEAR(static_cast<const float*>(out->data)[i], want, 1e-5);
      }
      runtime::FreeOutput(out->data);
      ASSERT_TRUE(rt.ReleaseHandle(*h).ok());
    }
  });
}

TEST(CollectivesTest, HundredSmallTensorsFuseAndReuseOneBuffer) {
  constexpr int kTensors = 100;
  std::vector<int64_t> allocations(2);
  RunRanks(2, [&](int rank, runtime::Runtime& rt) {
    for (int step = 0; step < 5; ++step) {
      std::vector<std::vector<float>> bufs(kTensors, std::vector<float>(4, 1.0f + rank));
      std::vector<int64_t> handles;
      for (int t = 0; t < kTensors; ++t) {
        runtime::OpOptions o;
        o.name = "fused." + std::to_string(t);
        auto spec = Spec(bufs[t].data(), DataType::kFloat32, {4});
        auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
        ASSERT_TRUE(h.ok());
        handles.push_back(*h);
      }
      for (int64_t h : handles) ASSERT_TRUE(WaitAndRelease(rt, h).ok());
      for (const auto& b : bufs) EXPECT_EQ(b[0], 3.0f);
    }
    allocations[rank] = rt.fusion_allocations();
  });
  // The fusion buffer is allocated once and reused by every later step.
  EXPECT_EQ(allocations[0], 1);
  EXPECT_EQ(allocations[1], 1);
}

TEST(CollectivesTest, GroupedAllreduceCompletesOneHandle) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    std::vector<float> a = {1, 2}, b = {3};
    runtime::OpOptions o;
    o.name = "group";
    o.reduce_op = ReduceOp::kAverage;
    auto sa = Spec(a.data(), DataType::kFloat32, {2});
    auto sb = Spec(b.data(), DataType::kFloat32, {1});
    auto h = rt.EnqueueAllreduce({sa, sb}, {sa, sb}, o, true);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
    EXPECT_EQ(a, (std::vector<float>{1, 2}));
    EXPECT_EQ(b[0], 3);
  });
}

TEST(CollectivesTest, GroupedAllgatherAndReducescatterGiveOneOutputPerTensor) {
  RunRanks(2, [](int rank, runtime::Runtime& rt) {
    std::vector<int32_t> a = {rank}, b = {rank * 10, rank * 10 + 1};
    runtime::OpOptions o;
    o.name = "gg";
    auto h = rt.EnqueueAllgather(
        {Spec(a.data(), DataType::kInt32, {1}), Spec(b.data(), DataType::kInt32, {2})}, o, true);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(rt.handles().Wait(*h, std::chrono::seconds(30)).ok());
    ASSERT_EQ(*rt.handles().NumOutputs(*h), 2);
    auto first = rt.handles().TakeOutput(*h, 0);
    auto second = rt.handles().TakeOutput(*h, 1);
    ASSERT_TRUE(first.ok() && second.ok());
    const int32_t* f = static_cast<const int32_t*>(first->data);
    const int32_t* s = static_cast<const int32_t*>(second->data);
    EXPECT_EQ(std::vector<int32_t>(f, f + 2), (std::vector<int32_t>{0, 1}));
    EXPECT_EQ(std::vector<int32_t>(s, s + 4), (std::vector<int32_t>{0, 1, 10, 11}));
    EXPECT_EQ(rt.handles().TakeOutput(*h, 0).status().code(), StatusCode::kPreconditionFailed);
    runtime::FreeOutput(first->data);
    runtime::FreeOutput(second->data);
    ASSERT_TRUE(rt.ReleaseHandle(*h).ok());

    std::vector<float> x = {1, 2}, y = {3, 4, 5, 6};
    runtime::OpOptions r;
    r.name = "grs";
    h = rt.EnqueueReducescatter(
        {Spec(x.data(), DataType::kFloat32, {2}), Spec(y.data(), DataType::kFloat32, {2, 2})}, r,
        true);
    ASSERT_TRUE(h.ok());
    ASSERT_TRUE(rt.handles().Wait(*h, std::chrono::seconds(30)).ok());
    auto rx = rt.handles().TakeOutput(*h, 0);
    auto ry = rt.handles().TakeOutput(*h, 1);
    ASSERT_TRUE(rx.ok() && ry.ok());
    EXPECT_EQ(static_cast<const float*>(rx->data)[0], 2.0f * x[rank]);
    EXPECT_EQ(ry->shape.ToVector(), (std::vector<int64_t>{1, 2}));
    EXPECT_EQ(static_cast<const float*>(ry->data)[1], 2.0f * y[rank * 2 + 1]);
    runtime::FreeOutput(rx->data);
    runtime::FreeOutput(ry->data);
    ASSERT_TRUE(rt.ReleaseHandle(*h).ok());
  });
}

TEST(CollectivesTest, BarrierAndJoin) {
  constexpr int kSize = 3;
  RunRanks(kSize, [&](int rank, runtime::Runtime& rt) {
    auto b = rt.EnqueueBarrier(0);
    ASSERT_TRUE(b.ok());
    ASSERT_TRUE(WaitAndRelease(rt, *b).ok());
    // Rank 0 joins at once; the others allreduce twice first (rank 0 contributes zeros).
    if (rank != 0) {
      for (int step = 0; step < 2; ++step) {
        std::vector<float> buf(3, 1.0f);
        runtime::OpOptions o;
        o.name = "after_join." + std::to_string(step);
        auto spec = Spec(buf.data(), DataType::kFloat32, {3});
        auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
        ASSERT_TRUE(h.ok());
        ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
        EXPECT_EQ(buf[0], kSize - 1.0f);
      }
      if (rank == 2) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    auto j = rt.EnqueueJoin(-1);
    ASSERT_TRUE(j.ok());
    ASSERT_TRUE(rt.handles().Wait(*j, std::chrono::seconds(30)).ok());
    auto last = rt.handles().IntResult(*j);
    ASSERT_TRUE(last.ok());
    EXPECT_EQ(*last, 2);
    ASSERT_TRUE(rt.ReleaseHandle(*j).ok());
  });
}

}  // namespace
}  // namespace hvd::testing
