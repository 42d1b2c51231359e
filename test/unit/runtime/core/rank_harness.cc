#include "test/unit/runtime/core/rank_harness.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <thread>

#include "runtime/transports/reduction.h"

namespace hvd::testing {

runtime::RuntimeConfig TestConfig(int rank, int size) {
  runtime::RuntimeConfig c;
  c.rank = rank;
  c.size = size;
  c.local_rank = rank;
  c.local_size = size;
  c.timeout = std::chrono::seconds(20);
  c.stall_check_time = std::chrono::seconds(60);
  c.stall_shutdown_time = std::chrono::seconds(0);
  return c;
}

void RunRanks(int size, const RankBody& body, const ConfigTweak& tweak, InProcessWorld* world,
              const std::vector<std::vector<int32_t>>& process_sets, const GpuFactory& gpu) {
  std::unique_ptr<InProcessWorld> owned;
  if (world == nullptr) {
    owned = std::make_unique<InProcessWorld>(std::chrono::seconds(20));
    world = owned.get();
  }
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) {
    threads.emplace_back([&, r] {
      runtime::Runtime rt(world->Factory(), gpu ? gpu(r) : nullptr);
      runtime::RuntimeConfig config = TestConfig(r, size);
      if (tweak) tweak(&config);
      Status s = rt.Init(config, process_sets);
      ASSERT_TRUE(s.ok()) << "rank " << r << ": " << s.ToString();
      body(r, rt);
      EXPECT_TRUE(rt.Shutdown().ok());
    });
  }
  for (auto& t : threads) t.join();
}

Status WaitAndRelease(runtime::Runtime& rt, int64_t handle, double seconds) {
  Status s = rt.Wait(handle, std::chrono::duration<double>(seconds));
  if (s.code() != StatusCode::kInProgress) (void)rt.ReleaseHandle(handle);
  return s;
}

runtime::TensorSpec Spec(void* data, runtime::DataType dtype, std::vector<int64_t> shape) {
  runtime::TensorSpec t;
  t.data = data;
  t.dtype = dtype;
  t.shape = runtime::TensorShape(shape);
  return t;
}

namespace {

double GatherValue(int rank, size_t tensor, int64_t i) {
  return static_cast<double>(rank * 1000 + static_cast<int64_t>(tensor) * 16 + i);
}

void SetAt(void* buf, runtime::DataType dt, int64_t i, double v) {
  switch (dt) {
    case runtime::DataType::kInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case runtime::DataType::kInt64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case runtime::DataType::kFloat64:
      static_cast<double*>(buf)[i] = v;
      break;
    default:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
  }
}

double GetAt(const void* buf, runtime::DataType dt, int64_t i) {
  switch (dt) {
    case runtime::DataType::kInt32:
      return static_cast<const int32_t*>(buf)[i];
    case runtime::DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case runtime::DataType::kFloat64:
      return static_cast<const double*>(buf)[i];
    default:
      return static_cast<const float*>(buf)[i];
  }
}

// Checks output `t` of `handle` (taken and freed here) against every rank's contribution.
void ExpectGathered(runtime::Runtime& rt, int64_t handle, int32_t index, size_t t,
                    const GatherCase& c, int size) {
  auto out = rt.handles().TakeOutput(handle, index);
  ASSERT_TRUE(out.ok()) << c.name << ": " << out.status().ToString();
  int64_t total = 0;
  for (int r = 0; r < size; ++r) total += c.rows(r);
  EXPECT_EQ(out->shape.ToVector(), (std::vector<int64_t>{total, c.cols})) << c.name;
  EXPECT_EQ(out->dtype, c.dtype) << c.name;
  int64_t k = 0;
  for (int r = 0; r < size && out->shape[0] == total; ++r) {
    for (int64_t i = 0; i < c.rows(r) * c.cols; ++i, ++k) {
      EXPECT_EQ(GetAt(out->data, c.dtype, k), GatherValue(r, t, i))
          << c.name << " element " << k << " (rank " << r << ")";
    }
  }
  runtime::FreeOutput(out->data);
}

}  // namespace

void AllgatherAndCheck(runtime::Runtime& rt, int rank, int size,
                       const std::vector<GatherCase>& cases, bool grouped) {
  std::vector<std::vector<char>> inputs;
  std::vector<runtime::TensorSpec> specs;
  for (size_t t = 0; t < cases.size(); ++t) {
    const GatherCase& c = cases[t];
    const int64_t n = c.rows(rank) * c.cols;
    inputs.emplace_back(static_cast<size_t>(n + 1) * runtime::DataTypeSize(c.dtype));
    for (int64_t i = 0; i < n; ++i)
      SetAt(inputs.back().data(), c.dtype, i, GatherValue(rank, t, i));
  }
  for (size_t t = 0; t < cases.size(); ++t) {
    specs.push_back(Spec(inputs[t].data(), cases[t].dtype, {cases[t].rows(rank), cases[t].cols}));
  }
  std::vector<int64_t> handles;
  for (size_t t = 0; t < cases.size(); ++t) {
    if (grouped && t > 0) break;
    runtime::OpOptions o;
    o.name = cases[t].name;
    auto h =
        grouped ? rt.EnqueueAllgather(specs, o, true) : rt.EnqueueAllgather({specs[t]}, o, false);
    ASSERT_TRUE(h.ok()) << cases[t].name << ": " << h.status().ToString();
    handles.push_back(*h);
  }
  for (size_t t = 0; t < cases.size(); ++t) {
    const int64_t h = grouped ? handles[0] : handles[t];
    if (!grouped || t == 0) {
      Status s = rt.Wait(h, std::chrono::seconds(30));
      ASSERT_TRUE(s.ok()) << cases[t].name << ": " << s.ToString();
    }
    ExpectGathered(rt, h, grouped ? static_cast<int32_t>(t) : 0, t, cases[t], size);
  }
  for (int64_t h : handles) EXPECT_TRUE(rt.ReleaseHandle(h).ok());
}

double At(const void* buf, runtime::DataType t, int64_t i) {
  switch (t) {
    case runtime::DataType::kUInt8:
    case runtime::DataType::kBool:
      return static_cast<const uint8_t*>(buf)[i];
    case runtime::DataType::kInt8:
      return static_cast<const int8_t*>(buf)[i];
    case runtime::DataType::kUInt16:
      return static_cast<const uint16_t*>(buf)[i];
    case runtime::DataType::kInt16:
      return static_cast<const int16_t*>(buf)[i];
    case runtime::DataType::kInt32:
      return static_cast<const int32_t*>(buf)[i];
    case runtime::DataType::kInt64:
      return static_cast<double>(static_cast<const int64_t*>(buf)[i]);
    case runtime::DataType::kFloat16:
      return runtime::HalfToFloat(static_cast<const uint16_t*>(buf)[i]);
    case runtime::DataType::kBFloat16:
      return runtime::BFloat16ToFloat(static_cast<const uint16_t*>(buf)[i]);
    case runtime::DataType::kFloat32:
      return static_cast<const float*>(buf)[i];
    default:
      return static_cast<const double*>(buf)[i];
  }
}

void Set(void* buf, runtime::DataType dt, int64_t i, double v) {
  switch (dt) {
    case runtime::DataType::kUInt8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(v);
      break;
    case runtime::DataType::kInt8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(v);
      break;
    case runtime::DataType::kUInt16:
      static_cast<uint16_t*>(buf)[i] = static_cast<uint16_t>(v);
      break;
    case runtime::DataType::kInt16:
      static_cast<int16_t*>(buf)[i] = static_cast<int16_t>(v);
      break;
    case runtime::DataType::kInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(v);
      break;
    case runtime::DataType::kInt64:
      static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v);
      break;
    case runtime::DataType::kFloat32:
      static_cast<float*>(buf)[i] = static_cast<float>(v);
      break;
    case runtime::DataType::kFloat64:
      static_cast<double*>(buf)[i] = v;
      break;
    case runtime::DataType::kBool:
      static_cast<uint8_t*>(buf)[i] = v != 0;
      break;
    case runtime::DataType::kFloat16:
      static_cast<uint16_t*>(buf)[i] = runtime::FloatToHalf(static_cast<float>(v));
      break;
    case runtime::DataType::kBFloat16:
      static_cast<uint16_t*>(buf)[i] = runtime::FloatToBFloat16(static_cast<float>(v));
      break;
  }
}

}  // namespace hvd::testing
