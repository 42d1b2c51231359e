#include "runtime/fusion_planner.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

Response Allreduce(const std::string& name, int64_t elements, DataType dtype = DataType::kFloat32,
                   const std::string& group = "") {
  Response r;
  r.names = {name};
  r.sizes = {elements};
  r.dtype = dtype;
  r.group = group;
  return r;
}

std::vector<std::vector<std::string>> Names(const std::vector<Response>& fused) {
  std::vector<std::vector<std::string>> out;
  for (const auto& r : fused) out.push_back(r.names.ToVector());
  return out;
}

using Groups = std::vector<std::vector<std::string>>;

TEST(FusionPlannerTest, FusesUpToTheThreshold) {
  FusionOptions options{40, false};  // 10 floats
  auto fused = PlanFusion({Allreduce("a", 4), Allreduce("b", 4), Allreduce("c", 4)}, options);
  EXPECT_EQ(Names(fused), (Groups{{"a", "b"}, {"c"}}));
  EXPECT_EQ(fused[0].sizes, (std::vector<int64_t>{4, 4}));
}

TEST(FusionPlannerTest, ZeroThresholdDisablesFusion) {
  auto fused = PlanFusion({Allreduce("a", 1), Allreduce("b", 1)}, FusionOptions{0, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"b"}}));
}

TEST(FusionPlannerTest, LooksAheadPastADifferentDtype) {
  // Given float32, float64, float32 responses that all fit
  auto fused =
      PlanFusion({Allreduce("a", 2), Allreduce("d", 2, DataType::kFloat64), Allreduce("b", 2)},
                 FusionOptions{1000, false});
  // Then the float32 tensors fuse and the float64 one keeps its place after them
  EXPECT_EQ(Names(fused), (Groups{{"a", "b"}, {"d"}}));
}

TEST(FusionPlannerTest, LookAheadStopsWhenSkippedBytesExceedThreshold) {
  auto fused =
      PlanFusion({Allreduce("a", 2), Allreduce("big", 100, DataType::kFloat64), Allreduce("b", 2)},
                 FusionOptions{64, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"big"}, {"b"}}));
}

TEST(FusionPlannerTest, BarrierStopsFusion) {
  Response barrier;
  barrier.type = OpType::kBarrier;
  barrier.names = {"barrier"};
  auto fused =
      PlanFusion({Allreduce("a", 1), barrier, Allreduce("b", 1)}, FusionOptions{1000, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"barrier"}, {"b"}}));
}

TEST(FusionPlannerTest, MismatchedScaleOrOpDoesNotFuse) {
  Response scaled = Allreduce("s", 1);
  scaled.prescale = 2.0;
  Response maxed = Allreduce("m", 1);
  maxed.reduce_op = ReduceOp::kMax;
  auto fused = PlanFusion({Allreduce("a", 1), scaled, maxed}, FusionOptions{1000, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"s"}, {"m"}}));
}

TEST(FusionPlannerTest, GroupsMoveAsOneUnit) {
  // Given a group of three that does not fit next to "a"
  FusionOptions options{48, false};  // 12 floats
  auto fused = PlanFusion(
      {Allreduce("a", 4), Allreduce("g.0", 4, DataType::kFloat32, "g"),
       Allreduce("g.1", 4, DataType::kFloat32, "g"), Allreduce("g.2", 4, DataType::kFloat32, "g")},
      options);
  // Then the group is never split
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"g.0", "g.1", "g.2"}}));
}

TEST(FusionPlannerTest, DisableGroupFusionKeepsGroupsApart) {
  auto fused = PlanFusion({Allreduce("a", 1), Allreduce("g.0", 1, DataType::kFloat32, "g"),
                           Allreduce("g.1", 1, DataType::kFloat32, "g")},
                          FusionOptions{1000, true});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"g.0", "g.1"}}));
}

TEST(FusionPlannerTest, OnlyAllreduceFuses) {
  Response gather = Allreduce("x", 1);
  gather.type = OpType::kAllgather;
  Response gather2 = gather;
  gather2.names = {"y"};
  auto fused = PlanFusion({gather, gather2}, FusionOptions{1000, false});
  EXPECT_EQ(Names(fused), (Groups{{"x"}, {"y"}}));
}

}  // namespace
}  // namespace hvd::runtime
