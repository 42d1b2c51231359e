// The GPU path's parts that need no GPU: the NCCL-or-staging decision of a process set and the
// enqueue-time checks of GPU tensors. The GPU itself is exercised by test/python/test_torch_gpu.py
// (ctest label gpu).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "runtime/core/runtime.h"
#include "runtime/transports/nccl/nccl_group.h"

namespace hvd::runtime {
namespace {

std::string Id(const std::string& mode, const std::string& host, const std::string& bus) {
  return mode + "\n" + host + "\n" + bus;
}

TEST(GpuPathTest, NcclWhenEveryRankHasItsOwnGpu) {
  EXPECT_EQ(DecideGpuPath({Id("auto", "a", "0000:01:00.0")}), "N");
  EXPECT_EQ(DecideGpuPath({Id("auto", "a", "0000:01:00.0"), Id("auto", "a", "0000:02:00.0"),
                           Id("auto", "b", "0000:01:00.0")}),
            "N");
  EXPECT_EQ(DecideGpuPath({Id("nccl", "a", "0000:01:00.0"), Id("nccl", "b", "0000:01:00.0")}), "N");
}

TEST(GpuPathTest, SharedGpuOrCpuModeStagesThroughTheHost) {
  EXPECT_EQ(DecideGpuPath({Id("auto", "a", "0000:01:00.0"), Id("auto", "a", "0000:01:00.0")}), "S");
  EXPECT_EQ(DecideGpuPath({Id("cpu", "a", "0000:01:00.0"), Id("cpu", "a", "0000:02:00.0")}), "S");
}

TEST(GpuPathTest, NcclWithASharedGpuOrDifferentModesIsAnErrorNamingThem) {
  const std::string shared =
      DecideGpuPath({Id("nccl", "a", "0000:01:00.0"), Id("nccl", "a", "0000:02:00.0"),
                     Id("nccl", "a", "0000:01:00.0")});
  ASSERT_EQ(shared[0], 'E') << shared;
  EXPECT_NE(shared.find("set ranks 0 and 2 share the GPU a 0000:01:00.0"), std::string::npos)
      << shared;
  EXPECT_NE(shared.find("HVD_GPU_OPERATIONS=auto or cpu"), std::string::npos) << shared;
  const std::string modes = DecideGpuPath({Id("auto", "a", "x"), Id("cpu", "b", "y")});
  ASSERT_EQ(modes[0], 'E') << modes;
  EXPECT_NE(modes.find("set rank 0 has 'auto', set rank 1 has 'cpu'"), std::string::npos) << modes;
}

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
  Result<void*> HostBuffer(int, int64_t) override { return Unused(); }
  Result<std::unique_ptr<GpuGroup>> CreateGroup(Communicator*, int, const std::string&) override {
    return std::unique_ptr<GpuGroup>();
  }
  int CurrentDevice() override { return 0; }
  void RestoreDevice(int) override {}
  void Abort() override {}
  void Start(std::chrono::milliseconds) override {}

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

}  // namespace
}  // namespace hvd::runtime
