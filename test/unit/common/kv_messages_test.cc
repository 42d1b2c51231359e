#include "common/kv_messages.h"

#include <gtest/gtest.h>

#include "common/byte_codec.h"

namespace hvd::control {
namespace {

TEST(ByteCodec, RoundTripsAndDetectsOverruns) {
  ByteWriter w;
  w.PutU8(7);
  w.PutU32(0xdeadbeef);
  w.PutI64(-5);
  w.PutBytes(std::string("a\0b", 3));
  ByteReader r(w.data());
  EXPECT_EQ(*r.GetU8(), 7);
  EXPECT_EQ(*r.GetU32(), 0xdeadbeefu);
  EXPECT_EQ(*r.GetI64(), -5);
  EXPECT_EQ(*r.GetBytes(), std::string("a\0b", 3));
  EXPECT_TRUE(r.Done());
  EXPECT_FALSE(r.GetU8().has_value());
  EXPECT_TRUE(r.failed());

  // A length prefix larger than what follows fails instead of over-reading.
  ByteWriter lie;
  lie.PutU32(1000);
  lie.PutRaw("abc");
  ByteReader bad(lie.data());
  EXPECT_FALSE(bad.GetBytes().has_value());
  EXPECT_FALSE(bad.Done());
}

TEST(KvMessages, EveryRequestRoundTrips) {
  std::vector<KvRequest> requests = {
      {FrameType::kSet, "k", std::string("v\0v", 3), 0, 0},
      {FrameType::kGet, "k", "", 0, 0},
      {FrameType::kWait, "k", "", 0, 1500},
      {FrameType::kAdd, "k", "", -42, 0},
      {FrameType::kDelete, "k", "", 0, 0},
      {FrameType::kFinishScope, "global/", "", 4, 0},
  };
  for (const KvRequest& request : requests) {
    auto decoded = DecodeKvRequest(request.op, EncodeKvRequest(request));
    ASSERT_TRUE(decoded.ok()) << FrameTypeName(request.op) << decoded.status().ToString();
    EXPECT_EQ(decoded->key, request.key);
    EXPECT_EQ(decoded->value, request.value);
    EXPECT_EQ(decoded->number, request.number);
    EXPECT_EQ(decoded->timeout_ms, request.timeout_ms);
  }
}

TEST(KvMessages, MalformedRequestsAreInvalidArgument) {
  std::string set = EncodeKvRequest({FrameType::kSet, "k", "v", 0, 0});
  EXPECT_FALSE(DecodeKvRequest(FrameType::kSet, set.substr(0, set.size() - 1)).ok());
  EXPECT_FALSE(DecodeKvRequest(FrameType::kSet, set + "x").ok());
  EXPECT_FALSE(
      DecodeKvRequest(FrameType::kWait, EncodeKvRequest({FrameType::kGet, "k", "", 0, 0})).ok());
  auto not_request = DecodeKvRequest(FrameType::kHello, "");
  ASSERT_FALSE(not_request.ok());
  EXPECT_EQ(not_request.status().code(), StatusCode::kInvalidArgument);
}

TEST(KvMessages, ResponsesRoundTripAndValidateTheCode) {
  KvResponse response{StatusCode::kTimeout, "key 'k' was not set", "", 9};
  auto decoded = DecodeKvResponse(EncodeKvResponse(response));
  ASSERT_TRUE(decoded.ok());
  EXPECT_EQ(decoded->code, StatusCode::kTimeout);
  EXPECT_EQ(decoded->message, response.message);
  EXPECT_EQ(decoded->number, 9);
  ByteWriter w;
  w.PutU32(999);
  w.PutBytes("");
  w.PutBytes("");
  w.PutI64(0);
  EXPECT_FALSE(DecodeKvResponse(w.data()).ok());
  EXPECT_FALSE(DecodeKvResponse("").ok());
}

TEST(KvMessages, ShutdownCauseKeysAndValues) {
  EXPECT_EQ(ShutdownCauseKey(0, 3), "shutdown_by/3");
  EXPECT_EQ(ShutdownCauseKey(2, 3), "shutdown_by/2/3");
  EXPECT_EQ(DecodeShutdownCause("12"), 12);
  EXPECT_EQ(DecodeShutdownCause("1 "), std::nullopt);
  EXPECT_EQ(DecodeShutdownCause("-1"), std::nullopt);
  EXPECT_EQ(DecodeShutdownCause(""), std::nullopt);
  EXPECT_EQ(DecodeShutdownCause("0"), 0);
  EXPECT_EQ(DecodeShutdownCause("-0000"), std::nullopt);  // from_chars reads it as 0
  EXPECT_EQ(DecodeShutdownCause("+1"), std::nullopt);
  EXPECT_EQ(DecodeShutdownCause("07"), std::nullopt);
}

}  // namespace
}  // namespace hvd::control
