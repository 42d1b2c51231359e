// The NCCL path's layouts (collective_plan.h), checked by hand-worked examples: uneven parts,
// empty parts, one tensor.
#include "runtime/core/execution/collective_plan.h"

#include <gtest/gtest.h>

#include <ostream>
#include <vector>

namespace hvd::runtime {

// gtest's printer for a run (found by ADL in the run's namespace).
void PrintTo(const RankMajorLayout::Run& r, std::ostream* os) {
  *os << "{tensor " << r.tensor << ", rank " << r.rank << ", at " << r.tensor_offset << " <-> "
      << r.packed_offset << ", " << r.bytes << " bytes}";
}

namespace {

using LayoutRun = RankMajorLayout::Run;

// Given 2 tensors on 3 ranks with uneven and empty parts, then the packed buffer holds rank 0's
// parts of both tensors, then rank 1's, then rank 2's, and each run says where its part is in
// its tensor (the tensor's earlier ranks' parts before it).
TEST(CollectivePlanTest, RankMajorLayoutPacksEveryTensorsPartRankByRank) {
  // tensor 0: 4, 0, 8 bytes from ranks 0, 1, 2; tensor 1: 2, 6, 0.
  const std::vector<int64_t> parts = {4, 0, 8, 2, 6, 0};
  RankMajorLayout l;
  PlanRankMajor(parts, 2, 3, &l);
  EXPECT_EQ(l.region_bytes, (std::vector<int64_t>{6, 6, 8}));
  EXPECT_EQ(l.region_starts, (std::vector<int64_t>{0, 6, 12}));
  EXPECT_EQ(l.tensor_bytes, (std::vector<int64_t>{12, 8}));
  EXPECT_EQ(l.total, 20);
  const std::vector<LayoutRun> expected = {
      {0, 0, 0, 0, 4},   // tensor 0 rank 0
      {1, 0, 0, 4, 2},   // tensor 1 rank 0
      {1, 1, 2, 6, 6},   // tensor 1 rank 1 (tensor 0 has nothing from rank 1)
      {0, 2, 4, 12, 8},  // tensor 0 rank 2, after its rank-0 part
  };
  EXPECT_EQ(l.runs, expected);
}

TEST(CollectivePlanTest, OneTensorIsItsOwnRanksInOrder) {
  const std::vector<int64_t> parts = {3, 5};
  RankMajorLayout l;
  PlanRankMajor(parts, 1, 2, &l);
  EXPECT_EQ(l.region_bytes, parts);
  EXPECT_EQ(l.tensor_bytes, (std::vector<int64_t>{8}));
  ASSERT_EQ(l.runs.size(), 2u);
  EXPECT_EQ(l.runs[1].tensor_offset, 3);
  EXPECT_EQ(l.runs[1].packed_offset, 3);
}

TEST(CollectivePlanTest, AllEmptyHasNoRuns) {
  const std::vector<int64_t> parts(6, 0);
  RankMajorLayout l;
  PlanRankMajor(parts, 2, 3, &l);
  EXPECT_TRUE(l.runs.empty());
  EXPECT_EQ(l.total, 0);
  EXPECT_EQ(l.region_bytes, (std::vector<int64_t>{0, 0, 0}));
}

// hvd's reducescatter split: 7 rows over 3 ranks are 3, 2, 2; 2 rows are 1, 1, 0.
TEST(CollectivePlanTest, ScatterPartsGiveTheFirstDim0ModNRanksARowMore) {
  std::vector<int64_t> parts;
  const std::vector<int64_t> dim0s = {7, 2}, row_bytes = {12, 8};
  ScatterParts(dim0s, row_bytes, 3, &parts);
  EXPECT_EQ(parts, (std::vector<int64_t>{36, 24, 24, 8, 8, 0}));
  EXPECT_EQ(ScatterRows(7, 3, 0), 3);
  EXPECT_EQ(ScatterRows(7, 3, 2), 2);
}

TEST(CollectivePlanTest, GatherPartsAreEachRanksRowsTimesTheRowBytes) {
  std::vector<int64_t> parts;
  const std::vector<int64_t> sizes = {1, 0, 3, 2, 2, 2}, row_bytes = {4, 16};
  GatherParts(sizes, row_bytes, 3, &parts);
  EXPECT_EQ(parts, (std::vector<int64_t>{4, 0, 12, 32, 32, 32}));
}

TEST(CollectivePlanTest, RowElementsIsOneForAVector) {
  EXPECT_EQ(RowElements({5}), 1);
  EXPECT_EQ(RowElements({5, 3, 2}), 6);
  EXPECT_EQ(RowElements({5, 0}), 0);
}

}  // namespace
}  // namespace hvd::runtime
