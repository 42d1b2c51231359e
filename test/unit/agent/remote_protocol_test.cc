#include "launcher/remote_protocol.h"

#include <gtest/gtest.h>

namespace hvd::launcher {
namespace {

RemoteRankRequest SampleRequest() {
  RemoteRankRequest r;
  r.argv = {"python3", "train.py", "--lr", "0.1", std::string("nul\0byte", 8)};
  r.env = {{"HVD_RANK", "3"}, {"PATH", "/usr/bin"}, {"EMPTY", ""}};
  r.cwd = "/home/user/project";
  control::JobKey key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 7);
  r.job_key = key;
  r.grace_period_s = 2.5;
  return r;
}

Result<std::optional<AgentMessage>> ReadOne(const std::string& bytes) {
  AgentFrameReader reader;
  reader.Feed(bytes);
  return reader.Next();
}

TEST(RemoteProtocolTest, StartFrameRoundTrips) {
  // Given a request with odd bytes, an empty value and a key
  RemoteRankRequest sent = SampleRequest();
  // When it is encoded and decoded
  auto got = ReadOne(EncodeStartFrame(sent));
  // Then every field survives
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  ASSERT_TRUE(got->has_value());
  const auto& r = std::get<RemoteRankRequest>(**got);
  EXPECT_EQ(r.argv, sent.argv);
  EXPECT_EQ(r.env, sent.env);
  EXPECT_EQ(r.cwd, sent.cwd);
  ASSERT_TRUE(r.job_key.has_value());
  EXPECT_EQ(*r.job_key, *sent.job_key);
  EXPECT_DOUBLE_EQ(r.grace_period_s, 2.5);
}

TEST(RemoteProtocolTest, LauncherSecretFdIsNeverSent) {
  RemoteRankRequest sent = SampleRequest();
  sent.env["HVD_SECRET_FD"] = "5";
  auto got = ReadOne(EncodeStartFrame(sent));
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(std::get<RemoteRankRequest>(**got).env.count("HVD_SECRET_FD"), 0u);
}

TEST(RemoteProtocolTest, FramesArriveByteByByte) {
  // Given a start frame and two signal frames fed one byte at a time
  std::string stream =
      EncodeStartFrame(SampleRequest()) + EncodeSignalFrame(15) + EncodeSignalFrame(10);
  AgentFrameReader reader;
  std::vector<AgentMessage> messages;
  for (char c : stream) {
    reader.Feed(std::string_view(&c, 1));
    for (;;) {
      auto next = reader.Next();
      ASSERT_TRUE(next.ok()) << next.status().ToString();
      if (!next->has_value()) break;
      messages.push_back(std::move(**next));
    }
  }
  // Then all three come out, in order, and nothing is left over
  ASSERT_EQ(messages.size(), 3u);
  EXPECT_TRUE(std::holds_alternative<RemoteRankRequest>(messages[0]));
  EXPECT_EQ(std::get<AgentSignal>(messages[1]).signo, 15);
  EXPECT_EQ(std::get<AgentSignal>(messages[2]).signo, 10);
  EXPECT_EQ(reader.buffered(), 0u);
}

TEST(RemoteProtocolTest, EveryTruncationIsAnError) {
  std::string frame = EncodeStartFrame(SampleRequest());
  std::string body = frame.substr(4);
  for (size_t n = 0; n < body.size(); ++n) {
    EXPECT_FALSE(DecodeAgentFrameBody(body.substr(0, n)).ok()) << "prefix of " << n;
  }
  EXPECT_FALSE(DecodeAgentFrameBody(body + "x").ok()) << "trailing byte";
}

TEST(RemoteProtocolTest, OversizedLengthIsRejectedBeforeBuffering) {
  std::string huge("\x7f\xff\xff\xff", 4);
  auto got = ReadOne(huge);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("exceeds the limit"), std::string::npos);
}

TEST(RemoteProtocolTest, ControlFramesHaveASmallLimit) {
  AgentFrameReader reader;
  reader.Feed(EncodeStartFrame(SampleRequest()));
  ASSERT_TRUE(reader.Next().ok());
  reader.Feed(std::string("\x00\x00\x10\x00", 4));  // 4096-byte control frame
  EXPECT_FALSE(reader.Next().ok());
}

TEST(RemoteProtocolTest, SignalBeforeStartIsRejected) {
  auto got = ReadOne(EncodeSignalFrame(15));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("start frame first"), std::string::npos);
}

TEST(RemoteProtocolTest, SecondStartIsRejected) {
  AgentFrameReader reader;
  reader.Feed(EncodeStartFrame(SampleRequest()) + EncodeStartFrame(SampleRequest()));
  ASSERT_TRUE(reader.Next().ok());
  EXPECT_FALSE(reader.Next().ok());
}

TEST(RemoteProtocolTest, VersionMismatchSaysWhatToDo) {
  std::string body = EncodeStartFrame(SampleRequest()).substr(4);
  body[1 + 4 + 3] = 99;  // type, magic, low byte of the version
  auto got = DecodeAgentFrameBody(body);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("version 99"), std::string::npos);
  EXPECT_NE(got.status().message().find("same hvd build"), std::string::npos);
}

TEST(RemoteProtocolTest, UnknownTypeAndBadSignalAreErrors) {
  EXPECT_FALSE(DecodeAgentFrameBody(std::string("\x09", 1)).ok());
  EXPECT_FALSE(DecodeAgentFrameBody(std::string("\x02\x00\x00\x00\x00", 5)).ok());  // signal 0
  EXPECT_FALSE(DecodeAgentFrameBody(std::string("\x02\x00\x00\x01\x00", 5)).ok());  // 256
}

TEST(RemoteProtocolTest, InvalidEnvironmentNameIsRejected) {
  RemoteRankRequest r = SampleRequest();
  r.env["A=B"] = "x";
  auto got = ReadOne(EncodeStartFrame(r));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("A=B"), std::string::npos);
}

}  // namespace
}  // namespace hvd::launcher
