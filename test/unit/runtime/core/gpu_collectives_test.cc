// The NCCL path of allgather, reducescatter and alltoall (op_executor_nccl.cc) without a GPU:
// ranks are threads, each with a FakeGpu whose "NCCL group" runs every collective over the
// set's CPU communicator on host memory (test/fakes/fake_gpu.h). Each op runs twice in the same
// ranks, once on CPU tensors (the CPU path, the reference) and once on "CUDA" tensors (device
// 0): the results must be the same, the GPU outputs device outputs of device 0, and the fake's
// log must show that the group ran it (or that it was staged, where NCCL cannot reduce).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "test/unit/runtime/core/gpu_op_harness.h"

namespace hvd::testing {
namespace {

using runtime::DataType;
using runtime::OpOptions;
using runtime::ReduceOp;
using runtime::Runtime;

TEST(GpuCollectivesTest, AllgatherOfUnevenRowsOnNcclEqualsTheCpuPathForEveryDtype) {
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        for (DataType t : kAllTypes) {
          const std::string what = std::string("allgather ") + runtime::DataTypeName(t);
          // Ranks give 1, 0 and 2 rows: uneven, one empty (the NCCL group's broadcasts).
          std::vector<Tensor> in = {Make(t, {(rank * 2 + 1) % 3, 3}, rank)};
          OpOptions o;
          o.name = what;
          ExpectSame(RunOp(rt, Op::kAllgather, in, o, 0), RunOp(rt, Op::kAllgather, in, o, -1), t,
                     false, what);
          // Even rows (ncclAllGather).
          std::vector<Tensor> even = {Make(t, {2, 2}, rank, 1)};
          o.name = what + ".even";
          ExpectSame(RunOp(rt, Op::kAllgather, even, o, 0), RunOp(rt, Op::kAllgather, even, o, -1),
                     t, false, what + " even");
        }
      },
      logs);
  for (const auto& log : logs) {
    EXPECT_EQ(log->Count("Allgatherv"), 2 * static_cast<int>(std::size(kAllTypes)));
    EXPECT_EQ(log->Count("Finish(allgather)"), 2 * static_cast<int>(std::size(kAllTypes)));
  }
}

TEST(GpuCollectivesTest, AGroupedAllgatherIsOneFusedNcclCallEqualToTheCpuPath) {
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        for (DataType t : {DataType::kFloat32, DataType::kInt8, DataType::kFloat64}) {
          std::vector<Tensor> in = {Make(t, {rank + 1, 3}, rank), Make(t, {2 - rank % 2}, rank, 1),
                                    Make(t, {rank == 1 ? 0 : 2, 2, 2}, rank, 2)};
          OpOptions o;
          o.name = std::string("grouped.") + runtime::DataTypeName(t);
          ExpectSame(RunOp(rt, Op::kAllgather, in, o, 0), RunOp(rt, Op::kAllgather, in, o, -1), t,
                     false, o.name);
        }
      },
      logs);
  for (const auto& log : logs) EXPECT_EQ(log->Count("Allgatherv"), 3);  // one per grouped op
}

// Every dtype, Sum and Average (reducescatter's ops), uneven rows (7 over 3 ranks), with and
// without scale factors (powers of two: exact either way). NCCL runs what NcclReduces allows,
// into device outputs; the rest (int16, uint16, bool, scaled integers) is staged into host
// outputs, and must agree all the same.
TEST(GpuCollectivesTest, ReducescatterOnNcclEqualsTheCpuPathForEveryDtypeOpAndScale) {
  auto logs = Logs();
  std::vector<int> expected_nccl(kRanks, 0);
  RunWithFakeGpus(
      [&](int rank, Runtime& rt) {
        for (DataType t : kAllTypes) {
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
            for (bool scaled : {false, true}) {
              const std::string what = std::string("reducescatter ") + runtime::DataTypeName(t) +
                                       (op == ReduceOp::kSum ? " sum" : " average") +
                                       (scaled ? " scaled" : "");
              std::vector<Tensor> in = {Make(t, {7, 2}, rank)};
              OpOptions o;
              o.name = what;
              o.reduce_op = op;
              if (scaled) o.prescale = 0.5, o.postscale = 2.0;
              const bool average = op == ReduceOp::kAverage;
              const bool nccl =
                  runtime::NcclReduces(t, ReduceOp::kSum, scaled || average, kRanks, true);
              expected_nccl[rank] += nccl ? 1 : 0;
              ExpectSame(RunOp(rt, Op::kReducescatter, in, o, 0),
                         RunOp(rt, Op::kReducescatter, in, o, -1), t, average && IsFloat(t), what,
                         nccl ? 0 : -1);
            }
          }
        }
      },
      logs);
  for (int r = 0; r < kRanks; ++r) {
    EXPECT_EQ(expected_nccl[r], 4 * 4 + 4);  // floats: all 4 ways; 4 integer types unscaled Sum
    EXPECT_EQ(logs[r]->Count("ReduceScatter"), expected_nccl[r]);
  }
}

TEST(GpuCollectivesTest, AGroupedReducescatterIsOneFusedNcclCallEqualToTheCpuPath) {
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kAverage}) {
          // 7, 3 and 2 rows over 3 ranks: every tensor's split is uneven, one rank gets none of
          // the last.
          std::vector<Tensor> in = {Make(DataType::kFloat32, {7, 3}, rank),
                                    Make(DataType::kFloat32, {3}, rank, 1),
                                    Make(DataType::kFloat32, {2, 2, 2}, rank, 2)};
          OpOptions o;
          o.name = "grouped.rs." + std::to_string(static_cast<int>(op));
          o.reduce_op = op;
          if (op == ReduceOp::kSum) o.prescale = 0.25;
          ExpectSame(RunOp(rt, Op::kReducescatter, in, o, 0),
                     RunOp(rt, Op::kReducescatter, in, o, -1), DataType::kFloat32, false, o.name);
        }
      },
      logs);
  for (const auto& log : logs) EXPECT_EQ(log->Count("ReduceScatter"), 2);
}

// With splits (uneven, some empty, so that the sizes are exchanged over the CPU communicator)
// and without (every member's sizes from the response), every dtype; the received splits are
// the CPU path's.
TEST(GpuCollectivesTest, AlltoallOnNcclEqualsTheCpuPathWithAndWithoutSplits) {
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        for (DataType t : kAllTypes) {
          const std::string what = std::string("alltoall ") + runtime::DataTypeName(t);
          std::vector<Tensor> in = {Make(t, {6, 2}, rank)};
          OpOptions o;
          o.name = what;
          o.has_splits = true;
          o.splits = {rank, 0, 6 - rank};  // rank 0 sends itself nothing
          ExpectSame(RunOp(rt, Op::kAlltoall, in, o, 0), RunOp(rt, Op::kAlltoall, in, o, -1), t,
                     false, what);
          OpOptions even;
          even.name = what + ".even";
          ExpectSame(RunOp(rt, Op::kAlltoall, in, even, 0), RunOp(rt, Op::kAlltoall, in, even, -1),
                     t, false, what + " even");
        }
      },
      logs);
  for (const auto& log : logs) {
    EXPECT_EQ(log->Count("Alltoallv"), 2 * static_cast<int>(std::size(kAllTypes)));
  }
}

// Ranks 1 and 2's ops in set 1 (ranks 1 and 2), each on the GPU and on the CPU.
void SetOps(int rank, Runtime& rt) {
  std::vector<Tensor> in = {Make(DataType::kFloat32, {rank + 2, 2}, rank)};
  OpOptions o;
  o.process_set_id = 1;
  o.name = "set.allgather";
  ExpectSame(RunOp(rt, Op::kAllgather, in, o, 0), RunOp(rt, Op::kAllgather, in, o, -1),
             DataType::kFloat32, false, o.name);
  o.name = "set.reducescatter";
  std::vector<Tensor> rs = {Make(DataType::kFloat32, {5, 2}, rank)};
  ExpectSame(RunOp(rt, Op::kReducescatter, rs, o, 0), RunOp(rt, Op::kReducescatter, rs, o, -1),
             DataType::kFloat32, false, o.name);
  o.name = "set.alltoall";
  o.has_splits = true;
  o.splits = {1, 3};
  std::vector<Tensor> a2a = {Make(DataType::kInt32, {4, 3}, rank)};
  Outcome gpu = RunOp(rt, Op::kAlltoall, a2a, o, 0);
  Outcome cpu = RunOp(rt, Op::kAlltoall, a2a, o, -1);
  gpu.splits.resize(2);  // a 2-member set reports 2 splits
  cpu.splits.resize(2);
  ExpectSame(gpu, cpu, DataType::kInt32, false, o.name);
}

// A process set of ranks 1 and 2: its ops run on its own group (the set's CPU communicator),
// equal to the CPU path; rank 0 takes no part.
TEST(GpuCollectivesTest, AProcessSetRunsItsOpsOnItsOwnGroup) {
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        if (rank != 0) SetOps(rank, rt);
        auto b = rt.EnqueueBarrier(0);  // rank 0 stays until the set is done
        ASSERT_TRUE(b.ok());
        EXPECT_TRUE(WaitAndRelease(rt, *b).ok());
      },
      logs, true, {{1, 2}});
  EXPECT_TRUE(logs[0]->calls.empty());
  for (int r = 1; r < kRanks; ++r) {
    EXPECT_EQ(logs[r]->Count("Allgatherv"), 1);
    EXPECT_EQ(logs[r]->Count("ReduceScatter"), 1);
    EXPECT_EQ(logs[r]->Count("Alltoallv"), 1);
  }
}

// Horovod's per-op knobs (HOROVOD_GPU_ALLGATHER=MPI, ...): the ops they name are staged through
// host memory even though the set runs on NCCL (host outputs, the CPU path's results), while
// the others stay on NCCL.
TEST(GpuCollectivesTest, PerOpKnobsStageTheirOpsWhereTheSetRunsOnNccl) {
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        for (Op op : {Op::kAllgather, Op::kReducescatter, Op::kAlltoall}) {
          std::vector<Tensor> in = {Make(DataType::kFloat32, {6, 2}, rank)};
          OpOptions o;
          o.name = "knob." + std::to_string(static_cast<int>(op));
          const bool staged = op != Op::kAlltoall;
          ExpectSame(RunOp(rt, op, in, o, 0), RunOp(rt, op, in, o, -1), DataType::kFloat32, false,
                     o.name, staged ? -1 : 0);
        }
      },
      logs, true, {},
      [](runtime::RuntimeConfig* c) {
        c->gpu_staged.allgather = true;
        c->gpu_staged.reducescatter = true;
      });
  for (const auto& log : logs) {
    EXPECT_EQ(log->Count("Allgatherv"), 0);
    EXPECT_EQ(log->Count("ReduceScatter"), 0);
    EXPECT_EQ(log->Count("Alltoallv"), 1);
  }
}

}  // namespace
}  // namespace hvd::testing
