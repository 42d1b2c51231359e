#include "runtime/core/negotiation/request_validator.h"

#include <gtest/gtest.h>

namespace hvd::runtime {
namespace {

Request RankReq(int rank, std::vector<int64_t> shape, OpType type = OpType::kAllreduce) {
  Request r;
  r.rank = rank;
  r.name = "t";
  r.type = type;
  r.shape = std::move(shape);
  return r;
}

TEST(RequestValidatorTest, MatchingAllreduceGivesElementCount) {
  Response r = ConstructResponse({RankReq(0, {2, 3}), RankReq(1, {2, 3})}, false, 2);
  EXPECT_EQ(r.type, OpType::kAllreduce);
  EXPECT_EQ(r.sizes, (std::vector<int64_t>{6}));
}

TEST(RequestValidatorTest, AllgatherRecordsEveryFirstDimension) {
  Response r = ConstructResponse(
      {RankReq(0, {1, 4}, OpType::kAllgather), RankReq(1, {3, 4}, OpType::kAllgather)}, false, 2);
  ASSERT_EQ(r.type, OpType::kAllgather) << r.error;
  EXPECT_EQ(r.sizes, (std::vector<int64_t>{1, 3}));
  Response bad = ConstructResponse(
      {RankReq(0, {1, 4}, OpType::kAllgather), RankReq(1, {1, 5}, OpType::kAllgather)}, false, 2);
  EXPECT_EQ(bad.error,
            "Mismatched allgather tensor shapes: One rank sent a tensor with dimension 1 equal "
            "to 4, but another rank sent a tensor with dimension 1 equal to 5.");
}

TEST(RequestValidatorTest, ProcessSetChangesMustAgree) {
  auto control = [](int rank, OpType type, std::vector<int64_t> args) {
    Request r = RankReq(rank, {}, type);
    r.args = std::move(args);
    return r;
  };
  Response same = ConstructResponse(
      {control(0, OpType::kProcessSetAdd, {0, 1}), control(1, OpType::kProcessSetAdd, {0, 1})},
      false, 3);
  ASSERT_EQ(same.type, OpType::kProcessSetAdd) << same.error;
  EXPECT_EQ(same.sizes, (std::vector<int64_t>{0, 1}));
  Response added = ConstructResponse(
      {control(0, OpType::kProcessSetAdd, {0, 1}), control(2, OpType::kProcessSetAdd, {0, 2})},
      false, 3);
  EXPECT_EQ(added.error,
            "Mismatched process sets: rank 0 added a process set of ranks [0, 1], but rank 2 "
            "added [0, 2]. Every rank must add the same process sets in the same order.");
  Response removed = ConstructResponse(
      {control(0, OpType::kProcessSetRemove, {1}), control(1, OpType::kProcessSetRemove, {2})},
      false, 2);
  EXPECT_EQ(removed.error,
            "Mismatched process sets: rank 0 removed process set 1, but rank 1 removed 2. Every "
            "rank must remove the same process sets in the same order.");
}

TEST(RequestValidatorTest, DeviceMismatch) {
  Request gpu = RankReq(1, {2});
  gpu.device = 0;
  Response r = ConstructResponse({RankReq(0, {2}), gpu}, false, 2);
  EXPECT_EQ(r.type, OpType::kError);
  EXPECT_EQ(r.error,
            "Mismatched CPU/GPU device selection: One rank specified device CPU, but another "
            "rank specified device GPU 0.");
}

// Each rank's GPU is its own device (local rank i on GPU i): only CPU against GPU is an error.
TEST(RequestValidatorTest, DifferentGpusOfTheRanksAgree) {
  Request a = RankReq(0, {2}), b = RankReq(1, {2});
  a.device = 0;
  b.device = 1;
  Response r = ConstructResponse({a, b}, false, 2);
  EXPECT_EQ(r.type, OpType::kAllreduce) << r.error;
  EXPECT_EQ(r.device, 0);
}

TEST(RequestValidatorTest, OpsThatCannotRunWithJoinedRanks) {
  Response r = ConstructResponse({RankReq(0, {2}, OpType::kBroadcast)}, true, 2);
  EXPECT_EQ(r.error, "Broadcast is not supported with Join at this time.");
  Response ok = ConstructResponse({RankReq(0, {2})}, true, 2);
  EXPECT_EQ(ok.type, OpType::kAllreduce);
}

TEST(RequestValidatorTest, ScalarReducescatterIsRejected) {
  Response r = ConstructResponse({RankReq(0, {}, OpType::kReducescatter)}, false, 1);
  EXPECT_EQ(r.error, "Rank zero tried to reducescatter a rank-zero tensor.");
}

}  // namespace
}  // namespace hvd::runtime
