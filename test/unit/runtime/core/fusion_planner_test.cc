#include "runtime/core/negotiation/fusion_planner.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

Response AllreduceResponse(const std::string& name, int64_t elements,
                           DataType dtype = DataType::kFloat32, const std::string& group = "") {
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
  auto fused = PlanFusion(
      {AllreduceResponse("a", 4), AllreduceResponse("b", 4), AllreduceResponse("c", 4)}, options);
  EXPECT_EQ(Names(fused), (Groups{{"a", "b"}, {"c"}}));
  EXPECT_EQ(fused[0].sizes, (std::vector<int64_t>{4, 4}));
}

TEST(FusionPlannerTest, ZeroThresholdDisablesFusion) {
  auto fused =
      PlanFusion({AllreduceResponse("a", 1), AllreduceResponse("b", 1)}, FusionOptions{0, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"b"}}));
}

TEST(FusionPlannerTest, LooksAheadPastADifferentDtype) {
  // Given float32, float64, float32 responses that all fit
  auto fused = PlanFusion({AllreduceResponse("a", 2), AllreduceResponse("d", 2, DataType::kFloat64),
                           AllreduceResponse("b", 2)},
                          FusionOptions{1000, false});
  // Then the float32 tensors fuse and the float64 one keeps its place after them
  EXPECT_EQ(Names(fused), (Groups{{"a", "b"}, {"d"}}));
}

TEST(FusionPlannerTest, LookAheadStopsWhenSkippedBytesExceedThreshold) {
  auto fused =
      PlanFusion({AllreduceResponse("a", 2), AllreduceResponse("big", 100, DataType::kFloat64),
                  AllreduceResponse("b", 2)},
                 FusionOptions{64, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"big"}, {"b"}}));
}

TEST(FusionPlannerTest, BarrierStopsFusion) {
  Response barrier;
  barrier.type = OpType::kBarrier;
  barrier.names = {"barrier"};
  auto fused = PlanFusion({AllreduceResponse("a", 1), barrier, AllreduceResponse("b", 1)},
                          FusionOptions{1000, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"barrier"}, {"b"}}));
}

TEST(FusionPlannerTest, MismatchedScaleOrOpDoesNotFuse) {
  Response scaled = AllreduceResponse("s", 1);
  scaled.prescale = 2.0;
  Response maxed = AllreduceResponse("m", 1);
  maxed.reduce_op = ReduceOp::kMax;
  auto fused = PlanFusion({AllreduceResponse("a", 1), scaled, maxed}, FusionOptions{1000, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"s"}, {"m"}}));
}

TEST(FusionPlannerTest, GroupsMoveAsOneUnit) {
  // Given a group of three that does not fit next to "a"
  FusionOptions options{48, false};  // 12 floats
  auto fused =
      PlanFusion({AllreduceResponse("a", 4), AllreduceResponse("g.0", 4, DataType::kFloat32, "g"),
                  AllreduceResponse("g.1", 4, DataType::kFloat32, "g"),
                  AllreduceResponse("g.2", 4, DataType::kFloat32, "g")},
                 options);
  // Then the group is never split
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"g.0", "g.1", "g.2"}}));
}

TEST(FusionPlannerTest, DisableGroupFusionKeepsGroupsApart) {
  auto fused =
      PlanFusion({AllreduceResponse("a", 1), AllreduceResponse("g.0", 1, DataType::kFloat32, "g"),
                  AllreduceResponse("g.1", 1, DataType::kFloat32, "g")},
                 FusionOptions{1000, true});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"g.0", "g.1"}}));
}

// An allgather on `dims0.size()` ranks: rank k contributes dims0[k] rows of `row` elements.
Response Allgather(const std::string& name, std::vector<int64_t> dims0, int64_t row,
                   DataType dtype = DataType::kFloat32, const std::string& group = "") {
  Response r;
  r.type = OpType::kAllgather;
  r.names = {name};
  r.sizes = std::move(dims0);
  r.row_elements = {row};
  r.dtype = dtype;
  r.group = group;
  return r;
}

Response Reducescatter(const std::string& name, int64_t elements, double prescale = 1.0) {
  Response r = AllreduceResponse(name, elements);
  r.type = OpType::kReducescatter;
  r.prescale = prescale;
  return r;
}

TEST(FusionPlannerTest, ReducescattersFuseUpToTheThresholdEachWithTheirOwnKind) {
  // Given reducescatters of 4 floats around an allreduce, a scaled reducescatter and a
  // float64 one
  Response f64 = Reducescatter("rs.f64", 4);
  f64.dtype = DataType::kFloat64;
  auto fused =
      PlanFusion({Reducescatter("rs.a", 4), AllreduceResponse("ar", 4), Reducescatter("rs.b", 4),
                  Reducescatter("rs.scaled", 4, 0.5), f64, Reducescatter("rs.c", 4)},
                 FusionOptions{40, false});  // 10 floats
  // Then reducescatters of one dtype, op and scales fuse (up to the threshold), never with an
  // allreduce, and the others keep their order
  EXPECT_EQ(Names(fused), (Groups{{"rs.a", "rs.b"}, {"ar"}, {"rs.scaled"}, {"rs.f64"}, {"rs.c"}}));
  EXPECT_EQ(fused[0].type, OpType::kReducescatter);
  EXPECT_EQ(fused[0].sizes, (std::vector<int64_t>{4, 4}));
}

TEST(FusionPlannerTest, ZeroThresholdKeepsReducescattersApart) {
  auto fused = PlanFusion({Reducescatter("a", 1), Reducescatter("b", 1)}, FusionOptions{0, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"b"}}));
}

TEST(FusionPlannerTest, AllgatherBytesAreTheGatheredTotal) {
  // Given an allgather of 1 + 2 + 0 rows of 3 float32 each, and a fused pair
  const Response one = Allgather("a", {1, 2, 0}, 3);
  auto fused = PlanFusion({one, Allgather("b", {2, 2, 2}, 1)}, FusionOptions{1000, false});
  // Then its bytes count every rank's rows times the row size; the pair's add up
  EXPECT_EQ(ResponseBytes(one), 3 * 3 * 4);
  ASSERT_EQ(fused.size(), 1u);
  EXPECT_EQ(ResponseBytes(fused[0]), 3 * 3 * 4 + 6 * 1 * 4);
}

TEST(FusionPlannerTest, AllgathersFuseUpToTheThreshold) {
  // Given three allgathers of 36 bytes each (2 ranks: 1 + 2 rows of 3 float32)
  FusionOptions options{80, false};
  auto fused = PlanFusion(
      {Allgather("a", {1, 2}, 3), Allgather("b", {2, 1}, 3), Allgather("c", {1, 2}, 3)}, options);
  // Then the first two fuse, with their per-rank rows name-major and a row size each
  EXPECT_EQ(Names(fused), (Groups{{"a", "b"}, {"c"}}));
  EXPECT_EQ(fused[0].type, OpType::kAllgather);
  EXPECT_EQ(fused[0].sizes, (std::vector<int64_t>{1, 2, 2, 1}));
  EXPECT_EQ(fused[0].row_elements, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(fused[1].sizes, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(fused[1].row_elements, (std::vector<int64_t>{3}));
}

TEST(FusionPlannerTest, ZeroThresholdKeepsAllgathersApart) {
  auto fused =
      PlanFusion({Allgather("a", {1, 1}, 1), Allgather("b", {1, 1}, 1)}, FusionOptions{0, false});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"b"}}));
}

TEST(FusionPlannerTest, AllgathersAndAllreducesFuseEachWithTheirOwnKind) {
  // Given allreduces and allgathers interleaved, all fitting
  auto fused = PlanFusion({AllreduceResponse("a", 2), Allgather("x", {1, 1}, 2),
                           AllreduceResponse("b", 2), Allgather("y", {3, 0}, 1)},
                          FusionOptions{1000, false});
  // Then each kind fuses past the other (look-ahead), the allgathers keeping their place after
  EXPECT_EQ(Names(fused), (Groups{{"a", "b"}, {"x", "y"}}));
  EXPECT_EQ(fused[0].sizes, (std::vector<int64_t>{2, 2}));
  EXPECT_TRUE(fused[0].row_elements.empty());
  EXPECT_EQ(fused[1].sizes, (std::vector<int64_t>{1, 1, 3, 0}));
  EXPECT_EQ(fused[1].row_elements, (std::vector<int64_t>{2, 1}));
}

TEST(FusionPlannerTest, AllgatherLookAheadStopsWhenSkippedBytesExceedThreshold) {
  // Given a small allgather, a big float64 one (800 bytes) and another small one
  auto fused =
      PlanFusion({Allgather("a", {1, 1}, 2), Allgather("big", {50, 50}, 1, DataType::kFloat64),
                  Allgather("b", {1, 1}, 2)},
                 FusionOptions{64, false});
  // Then the look-ahead gives up at the big one and nothing fuses
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"big"}, {"b"}}));
}

TEST(FusionPlannerTest, AllgathersNeedTheSameDtypeAndDeviceButNotReduceOrScale) {
  Response on_gpu = Allgather("gpu", {1, 1}, 1);
  on_gpu.device = 0;
  Response scaled = Allgather("scaled", {1, 1}, 1);  // allgather ignores these fields
  scaled.prescale = 2.0;
  scaled.reduce_op = ReduceOp::kMax;
  auto fused = PlanFusion(
      {Allgather("a", {1, 1}, 1), Allgather("d", {1, 1}, 1, DataType::kInt64), on_gpu, scaled},
      FusionOptions{1000, false});
  EXPECT_EQ(Names(fused), (Groups{{"a", "scaled"}, {"d"}, {"gpu"}}));
}

TEST(FusionPlannerTest, AllgathersWithoutRowSizesDoNotFuse) {
  // Given allgathers that lack the per-name row size (a malformed or foreign response)
  Response bare = Allgather("x", {1, 1}, 1);
  bare.row_elements.clear();
  auto fused = PlanFusion({bare, Allgather("y", {1, 1}, 1), Allgather("z", {1, 1}, 1)},
                          FusionOptions{1000, false});
  // Then only the well-formed ones fuse
  EXPECT_EQ(Names(fused), (Groups{{"x"}, {"y", "z"}}));
}

TEST(FusionPlannerTest, GroupedAllgatherMovesAsOneUnitAndFusesWithNeighbours) {
  // Given an allgather of 2 floats, a group of three allgathers (8 floats) and another of 2
  auto fused =
      PlanFusion({Allgather("a", {1, 1}, 1), Allgather("g.0", {1, 1}, 1, DataType::kFloat32, "g"),
                  Allgather("g.1", {2, 2}, 1, DataType::kFloat32, "g"),
                  Allgather("g.2", {1, 1}, 1, DataType::kFloat32, "g"), Allgather("c", {1, 1}, 1)},
                 FusionOptions{44, false});  // 11 floats
  // Then "a" and the whole group (10 floats) fuse; "c" would make 12
  EXPECT_EQ(Names(fused), (Groups{{"a", "g.0", "g.1", "g.2"}, {"c"}}));
  EXPECT_EQ(fused[0].sizes, (std::vector<int64_t>{1, 1, 1, 1, 2, 2, 1, 1}));
  EXPECT_EQ(fused[0].group, "");  // a fused response spanning groups belongs to none
}

TEST(FusionPlannerTest, AGroupHoldsOneOpType) {
  // Given an allgather and an allreduce that share a group name (not from one grouped call)
  auto fused = PlanFusion({Allgather("g.0", {1, 1}, 1, DataType::kFloat32, "g"),
                           AllreduceResponse("g.1", 1, DataType::kFloat32, "g")},
                          FusionOptions{1000, false});
  // Then they are separate units and never one response
  EXPECT_EQ(Names(fused), (Groups{{"g.0"}, {"g.1"}}));
}

TEST(FusionPlannerTest, AGroupLargerThanTheThresholdStaysWhole) {
  auto fused =
      PlanFusion({Allgather("g.0", {4, 4}, 1, DataType::kFloat32, "g"),
                  Allgather("g.1", {4, 4}, 1, DataType::kFloat32, "g"), Allgather("b", {1, 1}, 1)},
                 FusionOptions{16, false});
  EXPECT_EQ(Names(fused), (Groups{{"g.0", "g.1"}, {"b"}}));
  EXPECT_EQ(fused[0].group, "g");
}

TEST(FusionPlannerTest, DisableGroupFusionKeepsGroupedAllgathersApart) {
  auto fused =
      PlanFusion({Allgather("a", {1, 1}, 1), Allgather("g.0", {1, 1}, 1, DataType::kFloat32, "g"),
                  Allgather("g.1", {1, 1}, 1, DataType::kFloat32, "g")},
                 FusionOptions{1000, true});
  EXPECT_EQ(Names(fused), (Groups{{"a"}, {"g.0", "g.1"}}));
}

TEST(FusionPlannerTest, SpanFormReusesItsBuffersForFusedAllgathers) {
  // Given the span form's scratch and output, filled once with a fused allgather
  const std::vector<Response> in = {Allgather("a", {1, 2}, 3), Allgather("b", {2, 1}, 3),
                                    AllreduceResponse("r", 4)};
  FusionScratch scratch;
  ReuseVector<Response> out;
  PlanFusion(in, FusionOptions{1000, false}, &scratch, &out);
  ASSERT_EQ(out.size(), 2u);
  const int64_t* sizes = out[0].sizes.data();
  const int64_t* rows = out[0].row_elements.data();
  const std::string* names = out[0].names.data();
  // When the same input is planned again
  PlanFusion(in, FusionOptions{1000, false}, &scratch, &out);
  // Then the output slot kept its buffers (no allocation) and holds the same plan
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].sizes.data(), sizes);
  EXPECT_EQ(out[0].row_elements.data(), rows);
  EXPECT_EQ(out[0].names.data(), names);
  EXPECT_EQ(out[0].sizes, (std::vector<int64_t>{1, 2, 2, 1}));
  EXPECT_EQ(out[0].row_elements, (std::vector<int64_t>{3, 3}));
  EXPECT_EQ(out[1].names.ToVector(), (std::vector<std::string>{"r"}));
  EXPECT_TRUE(out[1].row_elements.empty());
}

}  // namespace
}  // namespace hvd::runtime
