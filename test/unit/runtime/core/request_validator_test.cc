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

// A process set's broadcast roots are positions in the set on the wire; the error names the
// global ranks the user passed (set [2, 3]: roots 2 and 3, not 0 and 1, as until 2026-12-01).
TEST(RequestValidatorTest, MismatchedRootsInAProcessSetAreNamedByGlobalRank) {
  Request a = RankReq(0, {4}, OpType::kBroadcast), b = RankReq(1, {4}, OpType::kBroadcast);
  a.root = 0;
  b.root = 1;
  Response r = ConstructResponse({a, b}, false, 2, {2, 3});
  EXPECT_EQ(r.error,
            "Mismatched broadcast root ranks: One rank specified root rank 2, but another rank "
            "specified root rank 3.");
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

// What no rank of this build sends (a list that crossed hosts unauthenticated, or another
// build): an error naming the rank and the fault, before any size is computed from it.
TEST(RequestValidatorTest, MalformedRequestsGetAnErrorNamingTheRank) {
  auto error_of = [](Request bad, int set_size = 2) {
    Request good = bad;
    good.rank = 0;
    bad.rank = 1;
    Response r = ConstructResponse({good, bad}, false, set_size);
    EXPECT_EQ(r.type, OpType::kError);
    return r.error;
  };
  EXPECT_EQ(error_of(RankReq(1, {2, -3})),
            "Malformed request from rank 0 for tensor 't': shape [2, -3] has a negative "
            "dimension.");
  // 2^31 * 2^31 elements: no overflow yet, but more than 2^59 (byte counts must fit int64).
  EXPECT_EQ(error_of(RankReq(1, {int64_t{1} << 31, int64_t{1} << 31})),
            "Malformed request from rank 0 for tensor 't': shape [2147483648, 2147483648] has "
            "too many elements.");
  // A product that overflows int64, with a zero first dimension (no elements, a huge row).
  EXPECT_NE(error_of(RankReq(1, {0, int64_t{1} << 40, int64_t{1} << 40}, OpType::kAllgather))
                .find("has too many elements"),
            std::string::npos);
  // Partial products must not overflow either (Request::NumElements multiplies in order).
  EXPECT_NE(error_of(RankReq(1, {int64_t{1} << 40, int64_t{1} << 40, 0})).find("too many"),
            std::string::npos);
  // Each member's tensor fits; what they gather together does not.
  Response gathered = ConstructResponse(
      {RankReq(0, {int64_t{1} << 58}, OpType::kAllgather),
       RankReq(1, {int64_t{1} << 58}, OpType::kAllgather), RankReq(2, {1}, OpType::kAllgather)},
      false, 3);
  EXPECT_EQ(gathered.error, "Allgather of 't' gathers more than 2^59 elements.");
  Request root = RankReq(1, {2}, OpType::kBroadcast);
  root.root = 2;
  EXPECT_NE(error_of(root).find("broadcast root rank 2 is not a rank of a set of 2"),
            std::string::npos);
  Request splits = RankReq(1, {4}, OpType::kAlltoall);
  splits.args = {4};
  EXPECT_NE(error_of(splits).find("alltoall splits [4] are not one count per member of 2"),
            std::string::npos);
  splits.args = {5, -1};
  EXPECT_NE(error_of(splits).find("are not one count per member"), std::string::npos);
  // A removal without its id used to throw std::out_of_range on rank 0's background thread.
  Request remove = RankReq(1, {}, OpType::kProcessSetRemove);
  Response removed = ConstructResponse({remove}, false, 1);
  EXPECT_NE(removed.error.find("process set removal of [] is not one set id"), std::string::npos);
  Request add = RankReq(1, {}, OpType::kProcessSetAdd);
  add.args = {0, 2};
  EXPECT_NE(error_of(add).find("process set of ranks [0, 2] is not ranks of a set of 2"),
            std::string::npos);
  Request grouped = RankReq(1, {2});
  grouped.group = "g";
  grouped.group_size = 0;
  EXPECT_NE(error_of(grouped).find("group 'g' of 0 members"), std::string::npos);
}

}  // namespace
}  // namespace hvd::runtime
