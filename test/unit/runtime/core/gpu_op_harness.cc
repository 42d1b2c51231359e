#include "test/unit/runtime/core/gpu_op_harness.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "runtime/core/execution/output_memory.h"
#include "runtime/transports/reduction.h"

namespace hvd::testing {

using runtime::DataType;
using runtime::OpOptions;
using runtime::Runtime;

const DataType kAllTypes[11] = {DataType::kUInt8,   DataType::kInt8,    DataType::kUInt16,
                                DataType::kInt16,   DataType::kInt32,   DataType::kInt64,
                                DataType::kFloat16, DataType::kFloat32, DataType::kFloat64,
                                DataType::kBool,    DataType::kBFloat16};

bool IsFloat(DataType t) {
  return t == DataType::kFloat16 || t == DataType::kBFloat16 || t == DataType::kFloat32 ||
         t == DataType::kFloat64;
}

// Values 1..5 (a product over 3 ranks fits int8), different per rank, element and `salt`.
Tensor Make(DataType t, std::vector<int64_t> shape, int rank, int salt) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  Tensor x{t, std::move(shape),
           std::vector<char>(static_cast<size_t>(n + 1) * runtime::DataTypeSize(t))};
  for (int64_t i = 0; i < n; ++i) {
    const double v = (i * 7 + rank * 3 + salt) % 5 + 1;
    Set(x.data.data(), t, i, t == DataType::kBool ? v > 2 : v);  // bool: both values
  }
  return x;
}

// Runs `op` of `inputs` (one grouped op when several) on `device` (-1: the CPU path) and takes
// every output: a device output is given back as hvd_free_on_stream gives it (the caller's
// stream), a host output as hvd_free.
Outcome RunOp(Runtime& rt, Op op, std::vector<Tensor>& inputs, OpOptions o, int device) {
  std::vector<runtime::TensorSpec> specs;
  for (Tensor& x : inputs) {
    specs.push_back(Spec(x.data.data(), x.dtype, x.shape));
    specs.back().device = device;
  }
  o.name = (device < 0 ? "cpu." : "gpu.") + o.name;
  const bool grouped = specs.size() > 1;
  Result<int64_t> h = op == Op::kAllgather       ? rt.EnqueueAllgather(specs, o, grouped)
                      : op == Op::kReducescatter ? rt.EnqueueReducescatter(specs, o, grouped)
                                                 : rt.EnqueueAlltoall(specs[0], o);
  Outcome out;
  if (!h.ok()) {
    out.status = h.status();
    return out;
  }
  out.status = rt.Wait(*h, std::chrono::seconds(30));
  for (size_t i = 0; out.status.ok() && i < specs.size(); ++i) {
    auto t = rt.handles().TakeOutput(*h, static_cast<int32_t>(i));
    if (!t.ok()) {
      out.status = t.status();
      break;
    }
    out.shapes.push_back(t->shape.ToVector());
    out.devices.push_back(t->device);
    int64_t n = 1;
    for (int64_t d : out.shapes.back()) n *= d;
    const auto* p = static_cast<const char*>(t->data);
    out.bytes.emplace_back(p, p + n * static_cast<int64_t>(runtime::DataTypeSize(t->dtype)));
    if (t->device >= 0) {
      runtime::FreeOutputOn(t->data, reinterpret_cast<void*>(uintptr_t{0x5eed}));
    } else {
      runtime::FreeOutput(t->data);
    }
  }
  if (out.status.ok() && op == Op::kAlltoall) {
    auto splits = rt.handles().ReceivedSplits(*h);
    EXPECT_TRUE(splits.ok()) << splits.status().ToString();
    if (splits.ok()) out.splits = *splits;
  }
  if (out.status.code() != StatusCode::kInProgress) {
    EXPECT_TRUE(rt.ReleaseHandle(*h).ok());
  }
  return out;
}

// The GPU outcome equals the CPU one: the same shapes and values (within rounding where NCCL's
// pre-multiplied sum scales before it sums: Average of floats), on device 0 instead of the host.
void ExpectSame(const Outcome& gpu, const Outcome& cpu, DataType t, bool rounding,
                const std::string& what, int device) {
  ASSERT_TRUE(cpu.status.ok()) << what << " (CPU): " << cpu.status.ToString();
  ASSERT_TRUE(gpu.status.ok()) << what << " (GPU): " << gpu.status.ToString();
  ASSERT_EQ(gpu.shapes, cpu.shapes) << what;
  EXPECT_EQ(gpu.splits, cpu.splits) << what;
  for (size_t i = 0; i < gpu.bytes.size(); ++i) {
    EXPECT_EQ(gpu.devices[i], device) << what << ": the output's device";
    EXPECT_EQ(cpu.devices[i], -1) << what;
    if (!rounding) {
      EXPECT_EQ(gpu.bytes[i], cpu.bytes[i]) << what << " output " << i;
      continue;
    }
    const double tol = t == DataType::kFloat16 || t == DataType::kBFloat16 ? 2e-2 : 1e-6;
    const int64_t n = static_cast<int64_t>(cpu.bytes[i].size() / runtime::DataTypeSize(t));
    for (int64_t k = 0; k < n; ++k) {
      const double a = At(gpu.bytes[i].data(), t, k), b = At(cpu.bytes[i].data(), t, k);
      EXPECT_NEAR(a, b, tol * (1 + std::fabs(b))) << what << " output " << i << " element " << k;
    }
  }
}

std::vector<std::shared_ptr<FakeGpuLog>> Logs() {
  std::vector<std::shared_ptr<FakeGpuLog>> logs;
  for (int r = 0; r < kRanks; ++r) logs.push_back(std::make_shared<FakeGpuLog>());
  return logs;
}

// Runs `body` on kRanks thread ranks whose GPU backend is a FakeGpu (`nccl`: each rank "has a
// GPU of its own"), logging into logs[rank]; afterwards no fake device output is left and no
// group call broke the Finish contract.
void RunWithFakeGpus(const RankBody& body, const std::vector<std::shared_ptr<FakeGpuLog>>& logs,
                     bool nccl, const std::vector<std::vector<int32_t>>& sets,
                     const ConfigTweak& tweak, int fail_call) {
  const int64_t live = FakeDeviceOutputsLive();
  RunRanks(kRanks, body, tweak, nullptr, sets,
           [&](int rank) { return std::make_unique<FakeGpu>(nccl, logs[rank], fail_call); });
  EXPECT_EQ(FakeDeviceOutputsLive(), live) << "device outputs left allocated";
  for (const auto& log : logs) EXPECT_EQ(log->contract_violations, 0);
}

}  // namespace hvd::testing
