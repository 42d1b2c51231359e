// The NCCL path of allgather, reducescatter and alltoall with fake GPUs (gpu_op_harness.h) at
// its edges: a joined rank, a failing NCCL call, the outputs' ownership, sets that stage, and
// the timeline.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/core/execution/output_memory.h"
#include "test/unit/runtime/core/gpu_op_harness.h"

namespace hvd::testing {
namespace {

using runtime::DataType;
using runtime::OpOptions;
using runtime::ReduceOp;
using runtime::Runtime;

// Allreduces of rank 1 and 2 (one tensor, and a fused pair) with rank 0 joined.
void AllreduceWithRank0Joined(Runtime& rt, int rank, int device, std::vector<float>* out) {
  std::vector<float> a = {1.0f + rank, 2, 3}, b = {4, 5.0f * rank};
  if (rank == 0) return;
  OpOptions o;
  o.name = std::to_string(device) + ".joined.single";
  auto spec_a = Spec(a.data(), DataType::kFloat32, {3});
  auto spec_b = Spec(b.data(), DataType::kFloat32, {2});
  spec_a.device = spec_b.device = device;
  auto h = rt.EnqueueAllreduce({spec_a}, {spec_a}, o, false);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
  o.name = std::to_string(device) + ".joined.fused";
  h = rt.EnqueueAllreduce({spec_a, spec_b}, {spec_a, spec_b}, o, true);
  ASSERT_TRUE(h.ok()) << h.status().ToString();
  ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
  out->assign(a.begin(), a.end());
  out->insert(out->end(), b.begin(), b.end());
}

// Rank 0 joins; the others run AllreduceWithRank0Joined on device 0 and on the CPU path, which
// must give the same results, then `while_joined(rank)`, and join too. Every rank waits for its
// join.
void AllreduceBesideJoinedRank0(Runtime& rt, int rank,
                                const std::function<void(int)>& while_joined = nullptr) {
  std::vector<float> gpu, cpu;
  int64_t join = 0;
  if (rank == 0) {
    auto j = rt.EnqueueJoin(0);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    join = *j;
  }
  AllreduceWithRank0Joined(rt, rank, 0, &gpu);
  AllreduceWithRank0Joined(rt, rank, -1, &cpu);
  EXPECT_EQ(gpu, cpu);
  if (rank != 0) {
    // Ranks 1 and 2 give 1 + rank, rank 0 zeros; the fused op reduces the sum again.
    EXPECT_EQ(cpu[0], 2 * (2.0f + 3.0f));
    if (while_joined) while_joined(rank);
    auto j = rt.EnqueueJoin(0);
    ASSERT_TRUE(j.ok()) << j.status().ToString();
    join = *j;
  }
  ASSERT_TRUE(WaitAndRelease(rt, join).ok());
}

// Given rank 0 joined (on device 0), when ranks 1 and 2 allreduce CUDA tensors on NCCL, then
// rank 0 contributes zeros through its group as on the CPU path (same results), and an
// allgather or reducescatter is refused with Horovod's join error on both paths alike.
TEST(GpuCollectivesFailureTest, AJoinedRankContributesZerosOnNcclAndRefusesGathersAsTheCpu) {
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        AllreduceBesideJoinedRank0(rt, rank, [&](int joined_rank) {
          for (Op op : {Op::kAllgather, Op::kReducescatter}) {
            std::vector<Tensor> in = {Make(DataType::kFloat32, {3}, joined_rank)};
            OpOptions o;
            o.name = op == Op::kAllgather ? "joined.ag" : "joined.rs";
            const Outcome g = RunOp(rt, op, in, o, 0), c = RunOp(rt, op, in, o, -1);
            EXPECT_EQ(g.status.code(), c.status.code()) << g.status.ToString();
            EXPECT_NE(g.status.message().find("not supported with Join"), std::string::npos)
                << g.status.ToString();
          }
        });
      },
      logs);
  for (const auto& log : logs) EXPECT_EQ(log->Count("Allreduce"), 2);  // rank 0's too
}

// Given NCCL allreduces completed off the cycle (HVD_GPU_ASYNC_COMPLETION=1: the fake group
// reports each completion on a thread of its own, 2 ms after the work), then a joined rank's
// zeros, a lone and a fused op, and ten allreduces enqueued before the first wait (the
// DistributedOptimizer's pattern) give the CPU path's results, every op enqueued and deferred
// (none waited for on the cycle), and the handles of one op finish together.
TEST(GpuCollectivesFailureTest, AllreducesCompletedOffTheCycleEqualTheCpuPath) {
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        AllreduceBesideJoinedRank0(rt, rank);
        constexpr int kOps = 10;
        std::vector<std::vector<float>> grads(kOps);
        std::vector<int64_t> handles;
        for (int i = 0; i < kOps; ++i) {
          grads[i].assign(static_cast<size_t>(100 + i), static_cast<float>(rank + i));
          OpOptions o;
          o.name = "async.grad." + std::to_string(i);
          auto spec =
              Spec(grads[i].data(), DataType::kFloat32, {static_cast<int64_t>(grads[i].size())});
          spec.device = 0;
          auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
          ASSERT_TRUE(h.ok()) << h.status().ToString();
          handles.push_back(*h);
        }
        for (int i = 0; i < kOps; ++i) {
          const Status done = WaitAndRelease(rt, handles[i]);
          ASSERT_TRUE(done.ok()) << i << ": " << done.ToString();
          // 0 + 1 + 2 (the ranks) + 3 i
          for (float v : grads[i]) ASSERT_EQ(v, 3.0f + 3.0f * static_cast<float>(i)) << i;
        }
      },
      logs, true, {}, [](runtime::RuntimeConfig* c) { c->gpu_async_completion = true; });
  for (const auto& log : logs) {
    EXPECT_EQ(log->Count("Allreduce"), 0);
    EXPECT_EQ(log->Count("EnqueueAllreduce"), log->Count("Defer(allreduce)"));
    EXPECT_GE(log->Count("EnqueueAllreduce"), 3);  // the lone, the fused, 1-10 for the ten
  }
}

// Given NCCL allreduces completed off the cycle and rank 0's device passing its last one only
// after its peers shut down (they had their results and went on to hvd.shutdown()), then the
// shutdown they all agreed on lets rank 0's allreduce finish with the sum (GpuGroup::Drain), as
// the waiting cycle's would, instead of failing it with "Horovod has been shut down".
TEST(GpuCollectivesFailureTest, AShutdownLetsTheAllreducesCompletedOffTheCycleFinish) {
  auto logs = Logs();
  logs[0]->hold_completions = true;
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        std::vector<float> grad(64, static_cast<float>(rank));
        OpOptions o;
        o.name = "async.last";
        auto spec = Spec(grad.data(), DataType::kFloat32, {64});
        spec.device = 0;
        auto h = rt.EnqueueAllreduce({spec}, {spec}, o, false);
        ASSERT_TRUE(h.ok()) << h.status().ToString();
        const Status done = WaitAndRelease(rt, *h);
        ASSERT_TRUE(done.ok()) << done.ToString();
        for (float v : grad) ASSERT_EQ(v, 3.0f);  // 0 + 1 + 2
      },
      logs, true, {}, [](runtime::RuntimeConfig* c) { c->gpu_async_completion = true; });
  for (const auto& log : logs) EXPECT_EQ(log->Count("Drain"), 1);  // the shutdown cycle's
}

// Given every rank's first NCCL call failing (as a NCCL error would), then the allgather fails
// on every rank with that error and its device outputs are given back (RunWithFakeGpus checks
// that none is left), and the runtime refuses later ops as after any communicator failure.
// Before its handle failed, the op broke the set's group and waited for hvd's stream, in that
// order (OpExecutor::StopDeviceWork): nothing of the op's may land in its tensors afterwards.
TEST(GpuCollectivesFailureTest, AFailingNcclCallFailsTheOpEverywhereAndFreesItsOutputs) {
  for (bool grouped : {false, true}) {
    auto logs = Logs();
    RunWithFakeGpus(
        [&](int rank, Runtime& rt) {
          std::vector<Tensor> in = {Make(DataType::kFloat32, {rank + 1, 2}, rank)};
          if (grouped) in.push_back(Make(DataType::kInt32, {2}, rank));
          OpOptions o;
          o.name = "failing";
          const Outcome g = RunOp(rt, Op::kAllgather, in, o, 0);
          EXPECT_EQ(g.status.code(), StatusCode::kRemoteError) << g.status.ToString();
          EXPECT_NE(g.status.message().find("fake NCCL Allgatherv"), std::string::npos)
              << g.status.ToString();
          o.name = "after";
          EXPECT_FALSE(RunOp(rt, Op::kAllgather, in, o, 0).status.ok());
        },
        logs, true, {}, nullptr, /*fail_call=*/1);
    for (const auto& log : logs) {
      std::lock_guard<std::mutex> lock(log->mu);
      const auto at = [&](const std::string& call) {
        return std::find(log->calls.begin(), log->calls.end(), call) - log->calls.begin();
      };
      const auto end = static_cast<std::ptrdiff_t>(log->calls.size());
      EXPECT_LT(at("Break"), end);
      EXPECT_LT(at("Quiesce"), end);
      EXPECT_LT(at("Break"), at("Quiesce"));
    }
  }
}

// Given an allgather whose outputs are never taken, when its handle is released, then the
// device outputs are given back on the stream that allocated them (not as a caller's free);
// taken ones come back by hvd_free_on_stream, as the caller's.
TEST(GpuCollectivesFailureTest, DeviceOutputsComeBackWhetherTakenOrNot) {
  auto logs = Logs();
  const int64_t by_caller = FakeDeviceOutputsFreedOnCallerStream();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        Tensor x = Make(DataType::kFloat32, {2, 2}, rank);
        auto spec = Spec(x.data.data(), x.dtype, x.shape);
        spec.device = 0;
        OpOptions o;
        o.name = "untaken";
        auto h = rt.EnqueueAllgather({spec, spec}, o, true);
        ASSERT_TRUE(h.ok()) << h.status().ToString();
        ASSERT_TRUE(WaitAndRelease(rt, *h).ok());
        std::vector<Tensor> in = {x};
        o.name = "taken";
        EXPECT_TRUE(RunOp(rt, Op::kAllgather, in, o, 0).status.ok());
      },
      logs);
  EXPECT_EQ(FakeDeviceOutputsFreedOnCallerStream() - by_caller, kRanks);  // the taken ones
}

// Given a set that stages (ranks sharing a GPU), then allgather, reducescatter and alltoall of
// CUDA tensors give host outputs (device -1) equal to the CPU path's, and no group is used.
TEST(GpuCollectivesFailureTest, ASetThatStagesKeepsHostOutputs) {
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        for (Op op : {Op::kAllgather, Op::kReducescatter, Op::kAlltoall}) {
          std::vector<Tensor> in = {Make(DataType::kFloat32, {rank + 3, 2}, rank)};
          if (op != Op::kAllgather) in = {Make(DataType::kFloat32, {6, 2}, rank)};
          OpOptions o;
          o.name = "staged." + std::to_string(static_cast<int>(op));
          const Outcome g = RunOp(rt, op, in, o, 0), c = RunOp(rt, op, in, o, -1);
          ASSERT_TRUE(g.status.ok() && c.status.ok()) << g.status.ToString();
          EXPECT_EQ(g.devices, std::vector<int32_t>{-1}) << o.name;
          EXPECT_EQ(g.shapes, c.shapes) << o.name;
          EXPECT_EQ(g.bytes, c.bytes) << o.name;
          EXPECT_EQ(g.splits, c.splits) << o.name;
        }
      },
      logs, /*nccl=*/false);
  for (const auto& log : logs) EXPECT_TRUE(log->calls.empty());
}

// Given a timeline, then rank 0's shows the NCCL activities of the three ops, and the fused
// allgather's copies into its packed buffer.
TEST(GpuCollectivesFailureTest, TheTimelineNamesTheNcclActivities) {
  const std::string path = ::testing::TempDir() + "/gpu_collectives_timeline.json";
  std::remove(path.c_str());
  auto logs = Logs();
  RunWithFakeGpus(
      [](int rank, Runtime& rt) {
        std::vector<Tensor> two = {Make(DataType::kFloat32, {rank + 1}, rank),
                                   Make(DataType::kFloat32, {2}, rank)};
        std::vector<Tensor> one = {Make(DataType::kFloat32, {6}, rank)};
        OpOptions o;
        o.name = "tl.ag";
        EXPECT_TRUE(RunOp(rt, Op::kAllgather, two, o, 0).status.ok());
        o.name = "tl.rs";
        EXPECT_TRUE(RunOp(rt, Op::kReducescatter, one, o, 0).status.ok());
        o.name = "tl.a2a";
        EXPECT_TRUE(RunOp(rt, Op::kAlltoall, one, o, 0).status.ok());
      },
      logs, true, {}, [&](runtime::RuntimeConfig* c) { c->timeline_path = path; });
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  for (const char* activity : {"NCCL_ALLGATHER", "NCCL_REDUCESCATTER", "NCCL_ALLTOALL",
                               "MEMCPY_IN_FUSION_BUFFER", "ALLOCATE_OUTPUT"}) {
    EXPECT_NE(text.str().find(activity), std::string::npos) << activity << " in " << path;
  }
}

}  // namespace
}  // namespace hvd::testing
