// The GPU path's parts that need no GPU (the NCCL-or-staging decision itself is
// test/unit/runtime/transports/gpu_path_test.cc): the enqueue-time checks of GPU tensors, and (with
// fake backends) which thread runs a GPU op. The GPU itself is exercised by
// test/python/test_torch_gpu.py (ctest label gpu).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/core/execution/output_memory.h"
#include "runtime/core/runtime.h"
#include "runtime/transports/nccl/nccl_group.h"
#include "runtime/transports/reduction.h"

namespace hvd::runtime {
namespace {

// Host memory described as CUDA memory is refused at enqueue, naming the op and the address,
// whether or not this machine has a GPU (without one, CUDA's own reason is in the message).
TEST(GpuPathTest, HostMemoryDescribedAsGpuMemoryIsRefusedAtEnqueue) {
  Runtime rt;
  ASSERT_TRUE(rt.Init(RuntimeConfig{}).ok());
  std::vector<float> host(4, 1.0f);
  TensorSpec t;
  t.data = host.data();
  t.dtype = DataType::kFloat32;
  t.shape = TensorShape(std::vector<int64_t>{4});
  t.device = 0;
  OpOptions o;
  o.name = "grads";
  auto h = rt.EnqueueAllreduce({t}, {t}, o, false);
  ASSERT_FALSE(h.ok());
  EXPECT_EQ(h.status().code(), StatusCode::kInvalidArgument) << h.status().ToString();
  EXPECT_NE(h.status().message().find("'grads'"), std::string::npos) << h.status().message();
  EXPECT_NE(h.status().message().find("tensor data at 0x"), std::string::npos)
      << h.status().message();
  t.device = -2;
  auto bad = rt.EnqueueAllreduce({t}, {t}, o, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("bad device -2"), std::string::npos)
      << bad.status().message();
  EXPECT_TRUE(rt.Shutdown().ok());
}

// A GPU backend without a GPU: every pointer is device memory except `bad`; counts the events
// MarkReady hands out and the ones given back.
class CountingGpu final : public GpuBackend {
 public:
  const void* bad = nullptr;
  int marked = 0;
  int outstanding = 0;

  Status CheckMemory(int device, const void* data) override {
    if (data == bad) {
      return Status::InvalidArgument("not memory of device " + std::to_string(device));
    }
    return Status::OK();
  }
  Result<void*> MarkReady(int device, const void* data, void* stream) override {
    (void)stream;
    if (data != nullptr) HVD_RETURN_IF_ERROR(CheckMemory(device, data));
    ++marked;
    ++outstanding;
    return static_cast<void*>(&events_[marked % 8]);
  }
  Status WaitReady(int device, void* event) override {
    (void)device;
    if (event != nullptr) --outstanding;
    return Status::OK();
  }
  void ReleaseEvent(void* event) override {
    if (event != nullptr) --outstanding;
  }
  Status CopyToHost(void*, const void*, int64_t, int) override { return Unused(); }
  Status CopyToDevice(void*, const void*, int64_t, int) override { return Unused(); }
  Result<int> Marker(int) override { return Unused(); }
  Status WaitMarker(int, int) override { return Unused(); }
  Status Sync(int) override { return Unused(); }
  Status Quiesce(int) override { return Unused(); }
  Result<void*> HostBuffer(int, int64_t) override { return Unused(); }
  Status CopyOnDevice(void*, const void*, int64_t, int) override { return Unused(); }
  Result<void*> DeviceScratch(int, int64_t) override { return Unused(); }
  Result<void*> AllocDeviceOutput(int, int64_t) override { return Unused(); }
  DeviceOutputFree device_output_free() const override { return nullptr; }
  Result<std::unique_ptr<GpuGroup>> CreateGroup(Communicator*, int, const std::string&) override {
    return std::unique_ptr<GpuGroup>();
  }
  int CurrentDevice() override { return 0; }
  void RestoreDevice(int) override {}
  void Abort() override {}
  void Start(std::chrono::milliseconds, const std::string&, int64_t) override {}

 private:
  static Status Unused() { return Status::Unimplemented("not used by this test"); }
  char events_[8] = {};
};

// Given a grouped allreduce, allgather or reducescatter of CUDA tensors whose second member is
// refused at enqueue, then the error names that member and the event recorded for the first
// member goes back to the backend (it was kept forever before).
TEST(GpuPathTest, AGroupedEnqueueThatFailsGivesBackTheEarlierMembersEvents) {
  auto owned = std::make_unique<CountingGpu>();
  CountingGpu* gpu = owned.get();
  Runtime rt(CreateDefaultProvider, std::move(owned));
  ASSERT_TRUE(rt.Init(RuntimeConfig{}).ok());
  std::vector<float> good(4, 1.0f), bad(4, 2.0f);
  gpu->bad = bad.data();
  auto spec = [](float* data) {
    TensorSpec t;
    t.data = data;
    t.dtype = DataType::kFloat32;
    t.shape = TensorShape(std::vector<int64_t>{4});
    t.device = 0;
    return t;
  };
  const std::vector<TensorSpec> group = {spec(good.data()), spec(bad.data())};
  OpOptions o;
  o.name = "grads";
  std::vector<Result<int64_t>> results;
  results.push_back(rt.EnqueueAllreduce(group, group, o, true));
  results.push_back(rt.EnqueueAllgather(group, o, true));
  results.push_back(rt.EnqueueReducescatter(group, o, true));
  for (const auto& r : results) {
    ASSERT_FALSE(r.ok());
    EXPECT_NE(r.status().message().find("not memory of device 0"), std::string::npos)
        << r.status().ToString();
  }
  EXPECT_EQ(gpu->marked, 3);  // the first member of each group got its event
  EXPECT_EQ(gpu->outstanding, 0);
  EXPECT_TRUE(rt.Shutdown().ok());
}

// A GPU backend whose "device memory" is host memory: staged ops run for real (copies are
// memcpys). Models CUDA's per-thread current device (a copy selects its device, as
// CudaBackend::State does) and records which threads ran the copies.
class StagingGpu final : public GpuBackend {
 public:
  static int& Current() {
    thread_local int current = 0;
    return current;
  }
  std::vector<std::thread::id> copy_threads() {
    std::lock_guard<std::mutex> lock(mu_);
    return copy_threads_;
  }

  Status CheckMemory(int, const void*) override { return Status::OK(); }
  Result<void*> MarkReady(int, const void*, void*) override { return static_cast<void*>(&event_); }
  Status WaitReady(int, void*) override { return Status::OK(); }
  void ReleaseEvent(void*) override {}
  Status CopyToHost(void* host, const void* device_data, int64_t bytes, int device) override {
    return Copy(host, device_data, bytes, device);
  }
  Status CopyToDevice(void* device_data, const void* host, int64_t bytes, int device) override {
    return Copy(device_data, host, bytes, device);
  }
  Result<int> Marker(int) override { return ++markers_; }
  Status WaitMarker(int, int) override { return Status::OK(); }
  Status Sync(int) override {
    markers_ = 0;
    return Status::OK();
  }
  Status Quiesce(int) override { return Status::OK(); }  // the copies ran at the call
  Result<void*> HostBuffer(int slot, int64_t bytes) override {
    auto& b = host_[slot];
    if (b.size() < static_cast<size_t>(bytes)) b.resize(static_cast<size_t>(bytes));
    return static_cast<void*>(b.data());
  }
  Status CopyOnDevice(void*, const void*, int64_t, int) override { return Unstaged(); }
  Result<void*> DeviceScratch(int, int64_t) override { return Unstaged(); }
  Result<void*> AllocDeviceOutput(int, int64_t) override { return Unstaged(); }
  DeviceOutputFree device_output_free() const override { return nullptr; }
  Result<std::unique_ptr<GpuGroup>> CreateGroup(Communicator*, int, const std::string&) override {
    return std::unique_ptr<GpuGroup>();  // stage through the host
  }
  int CurrentDevice() override { return Current(); }
  void RestoreDevice(int device) override { Current() = device; }
  void Abort() override {}
  void Start(std::chrono::milliseconds, const std::string&, int64_t) override {}

 private:
  static Status Unstaged() { return Status::Unimplemented("only the staged path is modelled"); }
  Status Copy(void* dst, const void* src, int64_t bytes, int device) {
    Current() = device;
    std::memcpy(dst, src, static_cast<size_t>(bytes));
    std::lock_guard<std::mutex> lock(mu_);
    copy_threads_.push_back(std::this_thread::get_id());
    return Status::OK();
  }
  std::mutex mu_;
  std::vector<std::thread::id> copy_threads_;
  int markers_ = 0;
  std::vector<char> host_[4];
  char event_ = 0;
};

// Given lone synchronous allreduces of a GPU tensor (as hvd.torch's allreduce_ makes), when the
// caller waits, then it runs the ops' cycles itself — the staging copies happen on its thread,
// no hand-off to the background thread and back (two thread wake-ups per op) — and its current
// device is what it was before (the op's device 1 was selected meanwhile). The background
// thread may still take an op now and then (its idle timer fires while the op is queued), so
// the test asks for most ops on the caller's thread; before 2026-11-23 it ran none.
TEST(GpuPathTest, ACallerWaitingOnALoneGpuOpRunsItsCycleAndKeepsItsDevice) {
  auto owned = std::make_unique<StagingGpu>();
  StagingGpu* gpu = owned.get();
  Runtime rt(CreateDefaultProvider, std::move(owned));
  ASSERT_TRUE(rt.Init(RuntimeConfig{}).ok());
  StagingGpu::Current() = 3;
  constexpr int kRounds = 20;
  for (int round = 0; round < kRounds; ++round) {
    std::vector<float> data = {1.0f, 2.0f, 3.0f, 4.0f}, out(4, 0.0f);
    TensorSpec in;
    in.data = data.data();
    in.dtype = DataType::kFloat32;
    in.shape = TensorShape(std::vector<int64_t>{4});
    in.device = 1;
    TensorSpec to = in;
    to.data = out.data();
    OpOptions o;
    o.name = "sync.grad";
    o.reduce_op = ReduceOp::kSum;
    o.wait_now = true;
    auto h = rt.EnqueueAllreduce({in}, {to}, o, false);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    ASSERT_TRUE(rt.Wait(*h, std::chrono::duration<double>(30)).ok());
    ASSERT_TRUE(rt.ReleaseHandle(*h).ok());
    EXPECT_EQ(out, data);  // one rank: the sum is the input, copied through the host
    EXPECT_EQ(StagingGpu::Current(), 3);
  }
  const auto threads = gpu->copy_threads();
  ASSERT_EQ(threads.size(), 2u * kRounds);  // a device->host and a host->device copy per op
  const auto mine = std::count(threads.begin(), threads.end(), std::this_thread::get_id());
  EXPECT_GE(mine, kRounds) << mine << " of " << threads.size() << " copies on the caller's thread";
  EXPECT_TRUE(rt.Shutdown().ok());
}

TensorSpec Float16Spec(uint16_t* data, int32_t device) {
  TensorSpec t;
  t.data = data;
  t.dtype = DataType::kFloat16;
  t.shape = TensorShape(std::vector<int64_t>{1});
  t.device = device;
  return t;
}

// Given a grouped op with a CPU tensor and a CUDA tensor (or tensors of two GPUs), then the
// enqueue is refused naming both members and their devices, and no event is kept. It used to be
// queued and fail in the fusion buffer's device copy with cudaErrorInvalidValue, which stayed
// pending for torch's next CUDA call.
TEST(GpuPathTest, AGroupedOpOfTwoDevicesIsRefusedAtEnqueueNamingBoth) {
  auto owned = std::make_unique<CountingGpu>();
  CountingGpu* gpu = owned.get();
  Runtime rt(CreateDefaultProvider, std::move(owned));
  ASSERT_TRUE(rt.Init(RuntimeConfig{}).ok());
  uint16_t a = 0, b = 0;
  OpOptions o;
  o.name = "mixed";
  for (int32_t second : {0, 1}) {
    const std::vector<TensorSpec> group = {Float16Spec(&a, second - 1), Float16Spec(&b, second)};
    const std::string first_text = second == 0 ? "the CPU" : "CUDA device 0";
    const std::string expected =
        "'mixed.1' is on CUDA device " + std::to_string(second) + " but 'mixed.0' on " + first_text;
    for (const auto& r :
         {rt.EnqueueAllreduce(group, group, o, true), rt.EnqueueAllgather(group, o, true),
          rt.EnqueueReducescatter(group, o, true)}) {
      ASSERT_FALSE(r.ok());
      EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(r.status().message().find(expected), std::string::npos) << r.status().ToString();
    }
  }
  EXPECT_EQ(gpu->outstanding, 0);
  EXPECT_TRUE(rt.Shutdown().ok());
}

// Given a float16 CUDA tensor staged through the host with a prescale or postscale of 0.1, then
// the result is Horovod's GPU result: the product in half of the value and half(0.1), not the
// float product rounded (7 x 0.1 is 0.69970703125 in half math, 0.7001953125 in float).
TEST(GpuPathTest, AStagedFloat16IsScaledByTheFactorInHalfAsHorovodsGpuPathDoes) {
  Runtime rt(CreateDefaultProvider, std::make_unique<StagingGpu>());
  ASSERT_TRUE(rt.Init(RuntimeConfig{}).ok());
  const float half_tenth = HalfToFloat(FloatToHalf(0.1f));
  const uint16_t expected = FloatToHalf(7.0f * half_tenth);
  ASSERT_NE(expected, FloatToHalf(7.0f * 0.1f));  // the two ways differ for this value
  for (bool pre : {true, false}) {
    uint16_t in = FloatToHalf(7.0f), out = 0;
    OpOptions o;
    o.name = pre ? "scaled.pre" : "scaled.post";
    o.reduce_op = ReduceOp::kSum;
    (pre ? o.prescale : o.postscale) = 0.1;
    auto h = rt.EnqueueAllreduce({Float16Spec(&in, 0)}, {Float16Spec(&out, 0)}, o, false);
    ASSERT_TRUE(h.ok()) << h.status().ToString();
    ASSERT_TRUE(rt.Wait(*h, std::chrono::duration<double>(30)).ok());
    ASSERT_TRUE(rt.ReleaseHandle(*h).ok());
    EXPECT_EQ(out, expected) << o.name << ": " << HalfToFloat(out);
    auto rs = rt.EnqueueReducescatter({Float16Spec(&in, 0)}, o, false);
    ASSERT_TRUE(rs.ok()) << rs.status().ToString();
    ASSERT_TRUE(rt.Wait(*rs, std::chrono::duration<double>(30)).ok());
    auto output = rt.handles().TakeOutput(*rs, 0);
    ASSERT_TRUE(output.ok()) << output.status().ToString();
    uint16_t scattered = 0;
    std::memcpy(&scattered, output->data, sizeof(scattered));
    FreeOutput(output->data);
    EXPECT_EQ(scattered, expected) << o.name << " reducescatter: " << HalfToFloat(scattered);
    ASSERT_TRUE(rt.ReleaseHandle(*rs).ok());
  }
  EXPECT_TRUE(rt.Shutdown().ok());
}

}  // namespace
}  // namespace hvd::runtime
