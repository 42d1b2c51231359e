#include "common/frame.h"

#include <gtest/gtest.h>

namespace hvd::control {
namespace {

JobKey Key(uint8_t fill) {
  JobKey key{};
  key.fill(fill);
  return key;
}

// A client/server channel pair as the handshake would build it.
struct Pair {
  Pair(const JobKey& key, const std::string& job)
      : keys(DeriveSessionKeys(key, job, NewNonce(), NewNonce())),
        client(keys.client_to_server, keys.server_to_client, 2, 2, 1 << 20),
        server(keys.server_to_client, keys.client_to_server, 2, 2, 1 << 20) {}
  SessionKeys keys;
  FrameChannel client;
  FrameChannel server;
};

TEST(FrameHeader, RoundTripsAndIsBigEndian) {
  FrameHeader header{FrameType::kWait, 0, 0x01020304, 0x1122334455667788ull};
  std::string bytes = EncodeHeader(header);
  ASSERT_EQ(bytes.size(), kFrameHeaderBytes);
  EXPECT_EQ(bytes.substr(0, 4), "HVDC");
  EXPECT_EQ(static_cast<uint8_t>(bytes[8]), 0x01);
  FrameHeader decoded;
  ASSERT_TRUE(DecodeHeader(bytes, UINT32_MAX, &decoded).ok());
  EXPECT_EQ(decoded.type, FrameType::kWait);
  EXPECT_EQ(decoded.body_length, 0x01020304u);
  EXPECT_EQ(decoded.sequence, 0x1122334455667788ull);
}

TEST(FrameHeader, RejectsEachBadField) {
  FrameHeader out;
  std::string good = EncodeHeader({FrameType::kSet, 0, 10, 2});
  auto fault_with = [&](size_t offset, char value) {
    std::string bad = good;
    bad[offset] = value;
    return DecodeHeader(bad, 1024, &out).fault;
  };
  EXPECT_EQ(fault_with(0, 'X'), FrameFault::kMalformed);  // magic
  EXPECT_EQ(fault_with(4, 2), FrameFault::kMalformed);    // version
  EXPECT_EQ(fault_with(5, 99), FrameFault::kMalformed);   // type
  EXPECT_EQ(fault_with(7, 1), FrameFault::kMalformed);    // flags
  EXPECT_EQ(DecodeHeader(good.substr(0, 19), 1024, &out).fault, FrameFault::kTruncated);
  FrameCheck big = DecodeHeader(EncodeHeader({FrameType::kSet, 0, 1025, 2}), 1024, &out);
  EXPECT_EQ(big.fault, FrameFault::kOversize);
  EXPECT_NE(big.detail.find("1025"), std::string::npos);
  EXPECT_TRUE(DecodeHeader(EncodeHeader({FrameType::kSet, 0, 1024, 2}), 1024, &out).ok());
}

TEST(FrameChannel, RoundTripsInBothDirections) {
  Pair p(Key(1), "job");
  for (std::string body : {std::string(), std::string("x"), std::string(70000, '\0')}) {
    Frame frame;
    ASSERT_TRUE(p.server.Open(p.client.Seal(FrameType::kSet, body), &frame).ok());
    EXPECT_EQ(frame.header.type, FrameType::kSet);
    EXPECT_EQ(frame.body, body);
    ASSERT_TRUE(p.client.Open(p.server.Seal(FrameType::kResponse, body), &frame).ok());
    EXPECT_EQ(frame.body, body);
  }
}

TEST(FrameChannel, EveryFlippedBitIsRefused) {
  Pair p(Key(1), "job");
  FrameChannel sender = p.client;
  std::string frame = sender.Seal(FrameType::kSet, "key-and-value");
  for (size_t i = 0; i < frame.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::string tampered = frame;
      tampered[i] = static_cast<char>(tampered[i] ^ (1 << bit));
      FrameChannel receiver = p.server;
      Frame out;
      EXPECT_FALSE(receiver.Open(tampered, &out).ok()) << "byte " << i << " bit " << bit;
    }
  }
  FrameChannel receiver = p.server;
  Frame out;
  EXPECT_TRUE(receiver.Open(frame, &out).ok());
}

TEST(FrameChannel, ReplayAndReorderAreOutOfSequence) {
  Pair p(Key(1), "job");
  std::string first = p.client.Seal(FrameType::kSet, "1");
  std::string second = p.client.Seal(FrameType::kSet, "2");
  Frame out;
  FrameChannel reorder = p.server;
  EXPECT_EQ(reorder.Open(second, &out).fault, FrameFault::kOutOfSequence);
  ASSERT_TRUE(p.server.Open(first, &out).ok());
  EXPECT_EQ(p.server.Open(first, &out).fault, FrameFault::kOutOfSequence);
  EXPECT_TRUE(p.server.Open(second, &out).ok());
}

TEST(FrameChannel, FrameFromAnotherConnectionOrDirectionFailsTheTag) {
  Pair a(Key(1), "job");
  Pair b(Key(1), "job");  // same key and job, different nonces
  Frame out;
  EXPECT_EQ(b.server.Open(a.client.Seal(FrameType::kSet, "x"), &out).fault, FrameFault::kBadTag);
  // Reflection: a client's own frame sent back to it.
  FrameChannel echo = a.client;
  EXPECT_EQ(a.client.Open(echo.Seal(FrameType::kResponse, "x"), &out).fault, FrameFault::kBadTag);
}

TEST(FrameChannel, WrongKeyFailsTheTag) {
  Nonce cn = NewNonce(), sn = NewNonce();
  SessionKeys right = DeriveSessionKeys(Key(1), "job", cn, sn);
  SessionKeys wrong = DeriveSessionKeys(Key(2), "job", cn, sn);
  SessionKeys other_job = DeriveSessionKeys(Key(1), "job2", cn, sn);
  EXPECT_NE(right.client_to_server, wrong.client_to_server);
  EXPECT_NE(right.client_to_server, other_job.client_to_server);
  EXPECT_NE(right.client_to_server, right.server_to_client);
  FrameChannel receiver(right.server_to_client, right.client_to_server, 2, 2, 1024);
  Frame out;
  EXPECT_EQ(receiver.Open(EncodeFrame(wrong.client_to_server, FrameType::kGet, 2, "k"), &out).fault,
            FrameFault::kBadTag);
}

TEST(ParseFrame, TruncatedAndTrailingBytes) {
  std::string frame = EncodeFrame(Key(1), FrameType::kGet, 0, "body");
  Frame out;
  EXPECT_EQ(ParseFrame(frame.substr(0, frame.size() - 1), 1024, &out).fault,
            FrameFault::kTruncated);
  EXPECT_EQ(ParseFrame(frame + "x", 1024, &out).fault, FrameFault::kMalformed);
  EXPECT_EQ(ParseFrame(frame, 3, &out).fault, FrameFault::kOversize);
  ASSERT_TRUE(ParseFrame(frame, 1024, &out).ok());
  EXPECT_EQ(out.body, "body");
  EXPECT_TRUE(FrameTagValid(Key(1), frame));
  EXPECT_FALSE(FrameTagValid(Key(2), frame));
  EXPECT_FALSE(FrameTagValid(Key(1), "short"));
}

TEST(Hello, RoundTripsAndBoundsTheJobId) {
  Hello hello{NewNonce(), "job-42"};
  Hello decoded;
  ASSERT_TRUE(DecodeHello(EncodeHello(hello), &decoded).ok());
  EXPECT_EQ(decoded.client_nonce, hello.client_nonce);
  EXPECT_EQ(decoded.job_id, "job-42");
  EXPECT_EQ(
      DecodeHello(EncodeHello({NewNonce(), std::string(kMaxJobIdBytes + 1, 'j')}), &decoded).fault,
      FrameFault::kMalformed);
  std::string body = EncodeHello(hello);
  EXPECT_FALSE(DecodeHello(body.substr(0, body.size() - 1), &decoded).ok());
  EXPECT_FALSE(DecodeHello(body + "x", &decoded).ok());
  EXPECT_NE(NewNonce(), NewNonce());
}

TEST(ServerHello, RoundTrips) {
  Nonce nonce = NewNonce(), decoded{};
  ASSERT_TRUE(DecodeServerHello(EncodeServerHello(nonce), &decoded).ok());
  EXPECT_EQ(decoded, nonce);
  EXPECT_FALSE(DecodeServerHello("short", &decoded).ok());
}

TEST(Reject, IsAParseableFrameWithAZeroTag) {
  std::string frame = EncodeReject("wrong key");
  Frame out;
  ASSERT_TRUE(ParseFrame(frame, kMaxHandshakeBodyBytes, &out).ok());
  EXPECT_EQ(out.header.type, FrameType::kReject);
  EXPECT_NE(out.body.find("wrong key"), std::string::npos);
  EXPECT_EQ(frame.substr(frame.size() - kFrameTagBytes), std::string(kFrameTagBytes, '\0'));
}

}  // namespace
}  // namespace hvd::control
