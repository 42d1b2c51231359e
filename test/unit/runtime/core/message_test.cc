#include "runtime/core/negotiation/message.h"

#include <gtest/gtest.h>

#include "runtime/core/negotiation/start_agreement.h"

namespace hvd::runtime {
namespace {

Request SampleRequest() {
  Request r;
  r.rank = 3;
  r.type = OpType::kAlltoall;
  r.name = "alltoall.layer1";
  r.dtype = DataType::kBFloat16;
  r.shape = {4, 5, 6};
  r.root = 2;
  r.reduce_op = ReduceOp::kMax;
  r.prescale = 0.5;
  r.postscale = 4.0;
  r.device = 1;
  r.group = "g";
  r.group_size = 2;
  r.args = {1, 2, 1};
  return r;
}

TEST(MessageTest, RequestListRoundTrips) {
  RequestList list;
  list.requests = {SampleRequest(), Request()};
  list.shutdown = true;
  auto decoded = DecodeRequestList(EncodeRequestList(list));
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->requests.size(), 2u);
  const Request& r = decoded->requests[0];
  EXPECT_EQ(r.rank, 3);
  EXPECT_EQ(r.type, OpType::kAlltoall);
  EXPECT_EQ(r.name, "alltoall.layer1");
  EXPECT_EQ(r.dtype, DataType::kBFloat16);
  EXPECT_EQ(r.shape, (std::vector<int64_t>{4, 5, 6}));
  EXPECT_EQ(r.root, 2);
  EXPECT_EQ(r.reduce_op, ReduceOp::kMax);
  EXPECT_EQ(r.prescale, 0.5);
  EXPECT_EQ(r.postscale, 4.0);
  EXPECT_EQ(r.device, 1);
  EXPECT_EQ(r.group, "g");
  EXPECT_EQ(r.group_size, 2);
  EXPECT_EQ(r.args, (std::vector<int64_t>{1, 2, 1}));
  EXPECT_TRUE(decoded->shutdown);
}

TEST(MessageTest, ARequestListsShutdownCarriesItsReason) {
  RequestList list;
  list.requests = {SampleRequest()};
  list.shutdown = true;
  list.shutdown_reason = "process set 1: stalled";
  auto decoded = DecodeRequestList(EncodeRequestList(list));
  ASSERT_TRUE(decoded.ok());
  EXPECT_TRUE(decoded->shutdown);
  EXPECT_EQ(decoded->shutdown_reason, "process set 1: stalled");
  ASSERT_EQ(decoded->requests.size(), 1u);
  list.shutdown = false;  // without a shutdown there is no reason on the wire
  decoded = DecodeRequestList(EncodeRequestList(list));
  ASSERT_TRUE(decoded.ok());
  EXPECT_FALSE(decoded->shutdown);
  EXPECT_TRUE(decoded->shutdown_reason.empty());
}

TEST(MessageTest, ResponseListRoundTrips) {
  ResponseList list;
  Response a;
  a.type = OpType::kError;
  a.names = {"x", "y"};
  a.error = "Mismatched data types";
  a.sizes = {7, 8};
  a.last_joined_rank = 2;
  list.responses = {a, Response()};
  list.shutdown = true;
  list.shutdown_reason = "stall";
  list.shutdown_ranks = {1, 3};
  auto decoded = DecodeResponseList(EncodeResponseList(list));
  ASSERT_TRUE(decoded.ok());
  ASSERT_EQ(decoded->responses.size(), 2u);
  EXPECT_EQ(decoded->responses[0].names, a.names);
  EXPECT_EQ(decoded->responses[0].error, a.error);
  EXPECT_EQ(decoded->responses[0].sizes, a.sizes);
  EXPECT_EQ(decoded->responses[0].last_joined_rank, 2);
  EXPECT_EQ(decoded->shutdown_reason, "stall");
  EXPECT_EQ(decoded->shutdown_ranks, (std::vector<int32_t>{1, 3}));
}

TEST(MessageTest, EveryTruncationIsAnErrorNotACrash) {
  RequestList list;
  list.requests = {SampleRequest()};
  const std::string bytes = EncodeRequestList(list);
  for (size_t n = 0; n < bytes.size(); ++n) {
    auto decoded = DecodeRequestList(bytes.substr(0, n));
    EXPECT_FALSE(decoded.ok()) << "prefix of " << n << " bytes";
  }
  EXPECT_FALSE(DecodeRequestList(bytes + "x").ok()) << "trailing bytes";
}

Response FusedAllgatherResponse() {
  Response r;
  r.type = OpType::kAllgather;
  r.names = {"ag.a", "ag.b"};
  r.dtype = DataType::kFloat64;
  r.sizes = {1, 2, 3, 0, 5, 6};  // two names x three ranks, name-major
  r.row_elements = {4, 1};
  return r;
}

TEST(MessageTest, AllgatherRowElementsRoundTrip) {
  // Given a fused allgather response (rows per rank and elements per row of each member)
  ResponseList list;
  list.responses = {FusedAllgatherResponse(), Response()};
  // When it goes through the wire format
  auto decoded = DecodeResponseList(EncodeResponseList(list));
  // Then both per-member fields come back, and other responses keep an empty row list
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  ASSERT_EQ(decoded->responses.size(), 2u);
  EXPECT_EQ(decoded->responses[0].sizes, (std::vector<int64_t>{1, 2, 3, 0, 5, 6}));
  EXPECT_EQ(decoded->responses[0].row_elements, (std::vector<int64_t>{4, 1}));
  EXPECT_TRUE(decoded->responses[1].row_elements.empty());
}

TEST(MessageTest, EvenAlltoallRowsRoundTripAndAreBoundsChecked) {
  // Given an alltoall response that lists every member's dim 0 (no member gave splits)
  Response a2a;
  a2a.type = OpType::kAlltoall;
  a2a.names = {"a2a"};
  a2a.sizes = {12};
  a2a.even_alltoall_rows = {6, 9, 3};
  ResponseList list;
  list.responses = {a2a, FusedAllgatherResponse()};
  const std::string bytes = EncodeResponseList(list);
  // When it goes through the wire format
  auto decoded = DecodeResponseList(bytes);
  // Then the rows come back, and a response without them keeps an empty list
  ASSERT_TRUE(decoded.ok()) << decoded.status().ToString();
  EXPECT_EQ(decoded->responses[0].even_alltoall_rows, (std::vector<int64_t>{6, 9, 3}));
  EXPECT_TRUE(decoded->responses[1].even_alltoall_rows.empty());
  // And a count claiming more rows than there are bytes is rejected, not read past the end
  std::string huge = EncodeResponseList(ResponseList{{a2a}, false, "", {}});
  const size_t count_at = huge.size() - 4 - 3 * 8 - 4;  // before {6, 9, 3} and the join rank
  ASSERT_EQ(huge[count_at], 3);
  huge[count_at + 3] = '\x7f';
  EXPECT_FALSE(DecodeResponseList(huge).ok());
}

TEST(MessageTest, EveryResponseTruncationIsAnErrorNotACrash) {
  // Given an encoded response list whose last field before the join rank is row_elements
  ResponseList list;
  list.responses = {FusedAllgatherResponse()};
  const std::string bytes = EncodeResponseList(list);
  // Then every proper prefix and a trailing byte are rejected
  for (size_t n = 0; n < bytes.size(); ++n) {
    EXPECT_FALSE(DecodeResponseList(bytes.substr(0, n)).ok()) << "prefix of " << n << " bytes";
  }
  EXPECT_FALSE(DecodeResponseList(bytes + "x").ok()) << "trailing bytes";
}

TEST(MessageTest, HugeRowElementsCountIsRejected) {
  // Given a response whose row_elements count claims more entries than there are bytes
  ResponseList list;
  list.responses = {FusedAllgatherResponse()};
  std::string bytes = EncodeResponseList(list);
  // before {4, 1}, the empty even_alltoall_rows and the join rank
  const size_t count_at = bytes.size() - 4 - 4 - 2 * 8 - 4;
  ASSERT_EQ(bytes[count_at], 2);
  bytes[count_at] = '\x03';
  std::string huge = bytes;
  huge[count_at + 3] = '\x7f';
  // Then decoding fails cleanly
  EXPECT_FALSE(DecodeResponseList(bytes).ok());
  EXPECT_FALSE(DecodeResponseList(huge).ok());
}

TEST(MessageTest, MalformedInputsAreRejected) {
  // Given a response list with a huge element count and one with a bad enum value
  ResponseList list;
  list.responses = {Response()};
  std::string bytes = EncodeResponseList(list);
  std::string huge = bytes;
  huge[2 + 4] = '\xff';  // response count after version, shutdown, empty reason length
  huge[2 + 5] = '\xff';
  huge[2 + 6] = '\xff';
  huge[2 + 7] = '\x7f';
  std::string bad_type = bytes;
  bad_type[2 + 4 + 4] = 99;  // first response's type
  std::string bad_version = bytes;
  bad_version[0] = 9;
  // Then decoding fails cleanly
  EXPECT_FALSE(DecodeResponseList(huge).ok());
  EXPECT_FALSE(DecodeResponseList(bad_type).ok());
  EXPECT_FALSE(DecodeResponseList(bad_version).ok());
  EXPECT_FALSE(DecodeResponseList("").ok());
  auto status = DecodeResponseList(bad_version).status();
  EXPECT_EQ(status.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("malformed response list"), std::string::npos);
}

// A member checks the shape of what rank 0 sent before any size in it is used: the list may have
// crossed hosts on a data connection nothing authenticates past the handshake.
TEST(MessageTest, ResponseListsOfTheWrongShapeAreRefusedNamingTheResponse) {
  auto check = [](Response r, int set_size = 3) {
    ResponseList list;
    list.responses = {std::move(r)};
    return CheckResponseList(list, set_size);
  };
  EXPECT_TRUE(check(FusedAllgatherResponse()).ok());
  EXPECT_FALSE(check(FusedAllgatherResponse(), 2).ok()) << "6 sizes are 3 members of 2 names";
  Response short_rows = FusedAllgatherResponse();
  short_rows.row_elements = {4};
  Status s = check(short_rows);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "malformed response list: response 0 (allgather of 'ag.a'): not one first dimension "
            "per tensor and member and one row size per tensor");
  Response huge = FusedAllgatherResponse();
  huge.sizes[0] = int64_t{1} << 40;
  huge.row_elements[0] = int64_t{1} << 40;
  EXPECT_NE(check(huge).message().find("sizes out of range"), std::string::npos);

  Response allreduce;
  allreduce.names = {"a", "b"};
  allreduce.sizes = {3, 4};
  EXPECT_TRUE(check(allreduce).ok());
  allreduce.sizes = {3};
  EXPECT_NE(check(allreduce).message().find("not one size per tensor"), std::string::npos);
  allreduce.sizes = {3, -4};
  EXPECT_NE(check(allreduce).message().find("sizes out of range"), std::string::npos);

  Response bcast;
  bcast.type = OpType::kBroadcast;
  bcast.names = {"p"};
  bcast.sizes = {8};
  bcast.root = 3;
  EXPECT_NE(check(bcast).message().find("root rank 3 out of range"), std::string::npos);
  Response a2a;
  a2a.type = OpType::kAlltoall;
  a2a.names = {"x"};
  a2a.sizes = {6};
  a2a.even_alltoall_rows = {3, 3};
  EXPECT_NE(check(a2a).message().find("not one first dimension per member"), std::string::npos);
  Response join;
  join.type = OpType::kJoin;
  join.names = {"join"};
  join.last_joined_rank = 7;
  EXPECT_NE(check(join).message().find("last joined rank 7 out of range"), std::string::npos);
  Response remove;
  remove.type = OpType::kProcessSetRemove;
  remove.names = {"process_set.remove"};
  EXPECT_NE(check(remove).message().find("not one process set id"), std::string::npos);
  Response add;
  add.type = OpType::kProcessSetAdd;
  add.names = {"process_set.add"};
  add.sizes = {0, 3};
  EXPECT_NE(check(add).message().find("process set rank out of range"), std::string::npos);
  EXPECT_NE(check(Response()).message().find("no tensor names"), std::string::npos);
}

// A response's sizes, and an alltoall's row counts, come from other members over the data
// connections.
TEST(MessageTest, CountsBeyondWhatAMemberSendsAreNamed) {
  const std::vector<int64_t> fine = {3, 0, 5};
  EXPECT_EQ(FirstCountBeyond(fine, 4), -1);
  const std::vector<int64_t> negative = {3, -1, 5};
  EXPECT_EQ(FirstCountBeyond(negative, 4), 1);
  const std::vector<int64_t> huge = {1, int64_t{1} << 58, int64_t{1} << 58};
  EXPECT_EQ(FirstCountBeyond(huge, 1), 2) << "the total passes 2^59 at the third";
  EXPECT_EQ(FirstCountBeyond(huge, 4), 1) << "rows of 4 elements pass it at the second";
  const std::vector<int64_t> wraps = {INT64_MAX, INT64_MAX};
  EXPECT_EQ(FirstCountBeyond(wraps, 1), 0);
}

// Rank 0's start-up check (Runtime::CheckSameEverywhere): the first knob that differs is named
// with both values; a line that does not read as one names its rank and shows its bytes
// printable, and no number is read from a sign, a leading zero or trailing junk.
TEST(StartAgreementTest, TheFirstDifferenceOrAMalformedLineIsNamed) {
  const StartKnob knobs[] = {{"HVD_A", 64}, {"HVD_B", -1}};
  const std::string own = EncodeStartLine(2, knobs, "[[0, 1]]");
  EXPECT_EQ(own, "2 64 -1 [[0, 1]]");
  EXPECT_EQ(JudgeStartLines({own, own}, 2, knobs, "[[0, 1]]"), "1");
  EXPECT_EQ(JudgeStartLines({own, "1 64 -1 [[0, 1]]"}, 2, knobs, "[[0, 1]]"), "0");
  EXPECT_EQ(JudgeStartLines({own, "2 64 7 [[0, 1]]"}, 2, knobs, "[[0, 1]]"),
            "HVD_B differs between ranks: rank 0 has -1, rank 1 has 7; every rank of a job needs "
            "the same value (export it before hvdrun: its ranks inherit it)");
  EXPECT_NE(JudgeStartLines({own, "2 64 -1 [[0, 2]]"}, 2, knobs, "[[0, 1]]")
                .find("process sets given to init differ between ranks: rank 0 has [[0, 1]], "
                      "rank 1 has [[0, 2]]"),
            std::string::npos);
  for (const std::string bad : {"", "x", "2", "2 64", "+2 64 -1 [[0, 1]]", "02 64 -1 [[0, 1]]",
                                "2 64x -1 [[0, 1]]", "2  64 -1 [[0, 1]]", "2 64 -1\x1b[[0, 1]]"}) {
    const std::string verdict = JudgeStartLines({own, own, bad}, 2, knobs, "[[0, 1]]");
    EXPECT_EQ(verdict.rfind("rank 2 sent a malformed start-up line", 0), 0)
        << bad << ": " << verdict;
  }
}

}  // namespace
}  // namespace hvd::runtime
