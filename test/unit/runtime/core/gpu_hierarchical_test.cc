// The hierarchical allreduce on GPUs (HVD_HIERARCHICAL_ALLREDUCE=1,
// OpExecutor::HierarchicalNcclAllreduce) without a GPU: 4 thread ranks on 2 "hosts"
// (InProcessWorld::SetRanksPerHost: the set's communicator is a hierarchy, as ShmProvider makes
// it), each with a FakeGpu whose "NCCL groups" run over the host's and the set's in-process
// groups. Each allreduce runs once on CPU tensors (the CPU hierarchy, the reference) and once
// on "CUDA" tensors; the results must agree and the fake's log must show the host's
// reduce-scatter and allgather on NCCL (never the flat NCCL allreduce).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "test/unit/runtime/core/gpu_op_harness.h"

namespace hvd::testing {
namespace {

using runtime::DataType;
using runtime::OpOptions;
using runtime::ReduceOp;
using runtime::Runtime;

constexpr int kHosts = 2, kPerHost = 2, kWorld = kHosts * kPerHost;

// Allreduces `inputs` (one grouped op when several) on `device` (-1: the CPU path) into fresh
// outputs and returns them; the inputs are left as they were.
Outcome Allreduce(Runtime& rt, std::vector<Tensor>& inputs, OpOptions o, int device) {
  std::vector<Tensor> outputs = inputs;
  std::vector<runtime::TensorSpec> in, out;
  for (size_t i = 0; i < inputs.size(); ++i) {
    in.push_back(Spec(inputs[i].data.data(), inputs[i].dtype, inputs[i].shape));
    out.push_back(Spec(outputs[i].data.data(), outputs[i].dtype, outputs[i].shape));
    in.back().device = out.back().device = device;
  }
  o.name = (device < 0 ? "cpu." : "gpu.") + o.name;
  Outcome result;
  auto h = rt.EnqueueAllreduce(in, out, o, inputs.size() > 1);
  if (!h.ok()) {
    result.status = h.status();
    return result;
  }
  result.status = WaitAndRelease(rt, *h);
  for (const Tensor& t : outputs) {
    int64_t n = 1;
    for (int64_t d : t.shape) n *= d;
    result.shapes.push_back(t.shape);
    result.devices.push_back(device < 0 ? -1 : device);
    result.bytes.emplace_back(t.data.begin(),
                              t.data.begin() + n * static_cast<int64_t>(DataTypeSize(t.dtype)));
  }
  return result;
}

std::vector<std::shared_ptr<FakeGpuLog>> WorldLogs() {
  std::vector<std::shared_ptr<FakeGpuLog>> logs;
  for (int r = 0; r < kWorld; ++r) logs.push_back(std::make_shared<FakeGpuLog>());
  return logs;
}

// Runs `body` on 2 hosts x 2 ranks with fake GPUs, HVD_HIERARCHICAL_ALLREDUCE as `hierarchical`
// and rank 0's timeline written to `timeline` when it is not empty.
void RunOnTwoHosts(const RankBody& body, const std::vector<std::shared_ptr<FakeGpuLog>>& logs,
                   const std::string& hierarchical, const std::string& timeline = "") {
  InProcessWorld world(std::chrono::seconds(30));
  world.SetRanksPerHost(kPerHost);
  const int64_t live = FakeDeviceOutputsLive();
  RunRanks(
      kWorld, body,
      [&](runtime::RuntimeConfig* c) {
        c->hierarchical_allreduce = hierarchical;
        c->timeline_path = timeline;
      },
      &world, {}, [&](int rank) { return std::make_unique<FakeGpu>(true, logs[rank]); });
  EXPECT_EQ(FakeDeviceOutputsLive(), live);
  for (const auto& log : logs) EXPECT_EQ(log->contract_violations, 0);
}

// What NCCL reduces (NcclReduces): the others are staged.
const DataType kNcclTypes[] = {DataType::kUInt8,   DataType::kInt8,    DataType::kInt32,
                               DataType::kInt64,   DataType::kFloat16, DataType::kFloat32,
                               DataType::kFloat64, DataType::kBFloat16};

// Every type NCCL reduces, Sum/Min/Max/Product and Average, with and without scale factors
// (floats), counts of 0, 1 (fewer than the host's ranks: empty slices), 7 (uneven slices) and
// 17x17x17 (an odd, large count), single and fused.
TEST(GpuHierarchicalTest, AllreduceRunsNcclWithinHostsAndCpuAcrossEqualToTheCpuHierarchy) {
  auto logs = WorldLogs();
  std::vector<int> expected(kWorld, 0);
  RunOnTwoHosts(
      [&](int rank, Runtime& rt) {
        for (DataType t : kNcclTypes) {
          for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMin, ReduceOp::kMax, ReduceOp::kProduct,
                              ReduceOp::kAverage}) {
            if (op == ReduceOp::kAverage && !IsFloat(t)) continue;
            for (bool scaled : {false, true}) {
              if (scaled && (!IsFloat(t) || op != ReduceOp::kSum)) continue;
              for (std::vector<int64_t> shape :
                   {std::vector<int64_t>{0}, {1}, {7}, {17, 17, 17}, {5, 3}}) {
                const bool fused = shape.size() == 2;
                const std::string what = std::string(runtime::DataTypeName(t)) + " op" +
                                         std::to_string(static_cast<int>(op)) +
                                         (scaled ? " scaled" : "") + " " +
                                         std::to_string(shape[0]) + (fused ? " fused" : "");
                std::vector<Tensor> in = {Make(t, shape, rank)};
                if (fused) in.push_back(Make(t, {4}, rank, 1));
                OpOptions o;
                o.name = what;
                o.reduce_op = op;
                if (scaled) {
                  o.prescale = 0.5;
                  o.postscale = 0.25;
                }
                // Floats reduce in another order where scaled (NCCL scales before the sum);
                // bfloat16 rounds a product of four values 1..5.
                const bool rounding = scaled || op == ReduceOp::kAverage ||
                                      (t == DataType::kBFloat16 && op == ReduceOp::kProduct);
                ExpectSame(Allreduce(rt, in, o, 0), Allreduce(rt, in, o, -1), t, rounding, what);
                if (rank == 0 && shape[0] > 0) ++expected[0];  // 0 elements: no call
              }
            }
          }
        }
      },
      logs, "on");
  for (const auto& log : logs) {
    EXPECT_EQ(log->Count("ReduceScatter"), expected[0]);
    EXPECT_EQ(log->Count("Allgatherv"), expected[0]);
    EXPECT_EQ(log->Count("Finish(hierarchical allreduce)"), 2 * expected[0]);
    EXPECT_EQ(log->Count("Allreduce"), 0);
  }
}

// What NCCL does not reduce (int16: staged) and the hierarchy turned off or left on auto (the
// flat NCCL allreduce, as Horovod's default) still agree with the CPU path.
TEST(GpuHierarchicalTest, WithoutTheFlagOrWhereNcclCannotReduceTheAllreduceIsNotHierarchical) {
  for (const std::string flag : {"auto", "off", "on"}) {
    auto logs = WorldLogs();
    RunOnTwoHosts(
        [&](int rank, Runtime& rt) {
          for (DataType t : {DataType::kFloat32, DataType::kInt16}) {
            std::vector<Tensor> in = {Make(t, {9}, rank)};
            OpOptions o;
            o.name = flag + runtime::DataTypeName(t);
            ExpectSame(Allreduce(rt, in, o, 0), Allreduce(rt, in, o, -1), t, false, o.name);
          }
        },
        logs, flag);
    for (const auto& log : logs) {
      // float32 on NCCL: hierarchical only when asked for; int16 staged either way.
      EXPECT_EQ(log->Count("ReduceScatter"), flag == "on" ? 1 : 0) << flag;
      EXPECT_EQ(log->Count("Allreduce"), flag == "on" ? 0 : 1) << flag;
    }
  }
}

// A joined rank (rank 3, on the second host) contributes zeros through the host's groups: the
// same results as the CPU path, for one tensor and a fused pair.
TEST(GpuHierarchicalTest, AJoinedRankContributesZerosThroughTheHierarchy) {
  auto logs = WorldLogs();
  RunOnTwoHosts(
      [](int rank, Runtime& rt) {
        int64_t join = 0;
        if (rank == 3) {
          auto j = rt.EnqueueJoin(0);
          ASSERT_TRUE(j.ok()) << j.status().ToString();
          join = *j;
        } else {
          for (bool fused : {false, true}) {
            std::vector<Tensor> in = {Make(DataType::kFloat32, {5}, rank)};
            if (fused) in.push_back(Make(DataType::kFloat32, {3}, rank, 2));
            OpOptions o;
            o.name = fused ? "joined.fused" : "joined.single";
            const Outcome gpu = Allreduce(rt, in, o, 0), cpu = Allreduce(rt, in, o, -1);
            ExpectSame(gpu, cpu, DataType::kFloat32, false, o.name);
            // Element 0 of ranks 0..2's first tensor: 1, 4, 2 (Make), rank 3's zero.
            ASSERT_FALSE(cpu.bytes.empty());
            EXPECT_EQ(At(cpu.bytes[0].data(), DataType::kFloat32, 0), 7.0);
          }
          auto j = rt.EnqueueJoin(0);
          ASSERT_TRUE(j.ok()) << j.status().ToString();
          join = *j;
        }
        ASSERT_TRUE(WaitAndRelease(rt, join).ok());
      },
      logs, "on");
  for (const auto& log : logs) EXPECT_EQ(log->Count("ReduceScatter"), 2);  // rank 3's too
}

// Rank's input with every element replaced by the average of its host's ranks' (Make).
Tensor HostAverage(DataType t, std::vector<int64_t> shape, int rank, int salt) {
  const int first = rank / kPerHost * kPerHost;
  Tensor avg = Make(t, shape, first, salt);
  const Tensor other = Make(t, shape, first + 1, salt);
  for (size_t i = 0; i < avg.data.size() / DataTypeSize(t) - 1; ++i) {
    const int64_t k = static_cast<int64_t>(i);
    Set(avg.data.data(), t, k, (At(avg.data.data(), t, k) + At(other.data.data(), t, k)) / 2);
  }
  return avg;
}

// op=Adasum on NCCL over several hosts, as Horovod's GPU Adasum: the host's average on NCCL,
// Adasum of the host averages across hosts, a broadcast within the host. The reference is the
// CPU path's Adasum of every rank's host average (Adasum of equal vectors is that vector, so
// four ranks holding A, A, B, B combine to Adasum(A, B)), one tensor and a fused pair, with and
// without a postscale. With the hierarchy off, the GPU Adasum is the CPU's over all ranks.
TEST(GpuHierarchicalTest, AdasumAveragesWithinTheHostOnNcclAndCombinesHostsAsHorovodsGpuAdasum) {
  auto logs = WorldLogs();
  RunOnTwoHosts(
      [](int rank, Runtime& rt) {
        for (DataType t : {DataType::kFloat32, DataType::kFloat64, DataType::kFloat16}) {
          for (bool fused : {false, true}) {
            std::vector<Tensor> in = {Make(t, {6, 5}, rank)},
                                ref = {HostAverage(t, {6, 5}, rank, 0)};
            if (fused) {
              in.push_back(Make(t, {7}, rank, 3));
              ref.push_back(HostAverage(t, {7}, rank, 3));
            }
            OpOptions o;
            o.name = std::string("adasum.") + runtime::DataTypeName(t) + (fused ? ".fused" : "");
            o.reduce_op = ReduceOp::kAdasum;
            o.postscale = fused ? 0.5 : 1.0;
            ExpectSame(Allreduce(rt, in, o, 0), Allreduce(rt, ref, o, -1), t, true, o.name);
          }
        }
      },
      logs, "auto");
  for (const auto& log : logs) {
    EXPECT_EQ(log->Count("Allreduce"), 6);  // the host's average
    EXPECT_EQ(log->Count("Broadcast"), 6);
    EXPECT_EQ(log->Count("ReduceScatter"), 0);
  }
  auto off = WorldLogs();
  RunOnTwoHosts(
      [](int rank, Runtime& rt) {
        std::vector<Tensor> in = {Make(DataType::kFloat32, {6, 5}, rank)};
        OpOptions o;
        o.name = "adasum.flat";
        o.reduce_op = ReduceOp::kAdasum;
        ExpectSame(Allreduce(rt, in, o, 0), Allreduce(rt, in, o, -1), DataType::kFloat32, true,
                   o.name);
      },
      off, "off");
  for (const auto& log : off) EXPECT_EQ(log->Count("Allreduce"), 0);  // staged
}

// The timeline shows the hierarchy's steps, as docs/gpu.md names them (the in-process cross
// group's name is FAKE where hvd's TCP would say TCP).
TEST(GpuHierarchicalTest, TheTimelineNamesTheHierarchysSteps) {
  const std::string path = ::testing::TempDir() + "/gpu_hierarchical_timeline.json";
  std::remove(path.c_str());
  auto logs = WorldLogs();
  RunOnTwoHosts(
      [](int rank, Runtime& rt) {
        std::vector<Tensor> in = {Make(DataType::kFloat32, {9}, rank)};
        OpOptions o;
        o.name = "tl.sum";
        EXPECT_TRUE(Allreduce(rt, in, o, 0).status.ok());
        o.name = "tl.adasum";
        o.reduce_op = ReduceOp::kAdasum;
        EXPECT_TRUE(Allreduce(rt, in, o, 0).status.ok());
      },
      logs, "on", path);
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  for (const char* activity :
       {"GPU_INIT_LOCAL", "NCCL_REDUCESCATTER", "MEMCPY_IN_HOST_BUFFER", "FAKE_ALLREDUCE",
        "MEMCPY_OUT_HOST_BUFFER", "NCCL_ALLGATHER", "NCCL_ALLREDUCE", "FAKE_ADASUM_ALLREDUCE",
        "NCCL_BCAST", "MEMCPY_OUT_FUSION_BUFFER"}) {
    EXPECT_NE(text.str().find(activity), std::string::npos) << activity << " in " << path;
  }
}

}  // namespace
}  // namespace hvd::testing
