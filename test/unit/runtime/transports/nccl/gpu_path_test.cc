// The GPU path's parts that need no GPU: the NCCL-or-staging decision of a process set and the
// enqueue-time checks of GPU tensors. The GPU itself is exercised by test/python/test_torch_gpu.py
// (ctest label gpu).
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace hvd::runtime
