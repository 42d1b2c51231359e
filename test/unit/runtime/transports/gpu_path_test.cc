// A process set's choice between NCCL and staging through the host (gpu_path.h): pure, so it
// is tested in every build, with or without CUDA. The GPU itself is exercised by
// test/python/test_torch_gpu.py (ctest label gpu).
#include "runtime/transports/gpu_path.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hvd::runtime {
namespace {

// A member's identity (gpu_path.h DecideGpuPath); `kernel`: its device runs hvd's kernel.
std::string Id(const std::string& mode, const std::string& host, const std::string& bus,
               bool kernel = true) {
  return mode + "\n" + host + "\n" + bus + (kernel ? "\nscale-kernel" : "");
}

TEST(GpuPathDecisionTest, NcclWhenEveryRankHasItsOwnGpu) {
  EXPECT_EQ(DecideGpuPath({Id("auto", "a", "0000:01:00.0")}), "NK");
  EXPECT_EQ(DecideGpuPath({Id("auto", "a", "0000:01:00.0"), Id("auto", "a", "0000:02:00.0"),
                           Id("auto", "b", "0000:01:00.0")}),
            "NK");
  EXPECT_EQ(DecideGpuPath({Id("nccl", "a", "0000:01:00.0"), Id("nccl", "b", "0000:01:00.0")}),
            "NK");
}

// One member whose GPU has no machine code for hvd's kernel (a V100 with a build for Turing and
// later) puts every member on NCCL's pre-multiplied sum: NCCL needs one reduction on all of
// them. The identity's kernel line does not count in telling GPUs apart.
TEST(GpuPathDecisionTest, AMemberWithoutTheScaleKernelPutsEveryMemberOnThePreMultipliedSum) {
  EXPECT_EQ(DecideGpuPath({Id("auto", "a", "0000:01:00.0", false)}), "N-");
  EXPECT_EQ(DecideGpuPath({Id("auto", "a", "0000:01:00.0"), Id("auto", "b", "0000:01:00.0", false),
                           Id("auto", "c", "0000:01:00.0")}),
            "N-");
  EXPECT_EQ(
      DecideGpuPath({Id("auto", "a", "0000:01:00.0"), Id("auto", "a", "0000:01:00.0", false)}),
      "S");
}

TEST(GpuPathDecisionTest, SharedGpuOrCpuModeStagesThroughTheHost) {
  EXPECT_EQ(DecideGpuPath({Id("auto", "a", "0000:01:00.0"), Id("auto", "a", "0000:01:00.0")}), "S");
  EXPECT_EQ(DecideGpuPath({Id("cpu", "a", "0000:01:00.0"), Id("cpu", "a", "0000:02:00.0")}), "S");
}

TEST(GpuPathDecisionTest, NcclWithASharedGpuOrDifferentModesIsAnErrorNamingThem) {
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

// A member that sends anything but "<mode>\n<machine>\n<bus>" is named, its bytes shown
// printable: the identities come over the job's connections, from a rank of another build or a bug.
TEST(GpuPathDecisionTest, AMalformedIdentityIsRefusedNamingItsRank) {
  for (const std::string& bad :
       {std::string(""), std::string("auto"), std::string("auto\na"), std::string("auto\n\nbus"),
        std::string("auto\na\nbus\nmore"), std::string("\na\nbus")}) {
    const std::string path = DecideGpuPath({Id("auto", "a", "0000:01:00.0"), bad});
    ASSERT_EQ(path[0], 'E') << bad;
    EXPECT_NE(path.find("set rank 1 sent a malformed GPU identity"), std::string::npos) << path;
    EXPECT_EQ(path.find('\n'), std::string::npos) << path;
  }
  const std::string control = DecideGpuPath({Id("auto\x1b[2J", "a", "b"), Id("cpu", "a", "c")});
  EXPECT_NE(control.find("'auto\\x1b[2J'"), std::string::npos) << control;
}

TEST(GpuPathDecisionTest, AMemberReadsOnlyTheDecisionsRankZeroMakes) {
  const std::string id(kNcclUniqueIdBytes, '\x01');
  auto staged = ReadGpuDecision("S");
  ASSERT_TRUE(staged.ok());
  EXPECT_FALSE(staged->nccl);
  auto nccl = ReadGpuDecision("NK" + id);
  ASSERT_TRUE(nccl.ok());
  EXPECT_TRUE(nccl->nccl && nccl->scale_kernel);
  EXPECT_EQ(nccl->unique_id, id);
  auto premul = ReadGpuDecision("N-" + id);
  ASSERT_TRUE(premul.ok());
  EXPECT_TRUE(premul->nccl && !premul->scale_kernel);
  auto error = ReadGpuDecision("Eset ranks 0 and 1 share the GPU");
  ASSERT_FALSE(error.ok());
  EXPECT_EQ(error.status().message(), "set ranks 0 and 1 share the GPU");
  for (const std::string& bad : {std::string(""), std::string("NK"), "NK" + id + "x", "NX" + id,
                                 std::string("SS"), "X-" + id}) {
    EXPECT_FALSE(ReadGpuDecision(bad).ok()) << bad;
  }
}

}  // namespace
}  // namespace hvd::runtime
