#include "launcher/agents/agent_protocol.h"

#include <gtest/gtest.h>
#include <sys/wait.h>

#include "common/byte_codec.h"

namespace hvd::launcher {
namespace {

AgentHello SampleHello() {
  AgentHello h;
  control::JobKey key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(i * 7);
  h.job_key = key;
  h.grace_period_s = 2.5;
  h.heartbeat_interval_s = 0.2;
  h.heartbeat_timeout_s = 3;
  h.cwd = "/home/user/project";
  return h;
}

AgentStart SampleStart() {
  AgentStart s;
  s.id = 7;
  s.argv = {"python3", "train.py", "--lr", "0.1", std::string("nul\0byte", 8)};
  s.env = {{"HVD_RANK", "7"}, {"PATH", "/usr/bin"}, {"EMPTY", ""}};
  return s;
}

// Every launcher message in `stream`, fed one byte at a time.
std::vector<LauncherMessage> ReadLauncher(const std::string& stream) {
  LauncherFrameReader reader;
  std::vector<LauncherMessage> out;
  for (char c : stream) {
    reader.Feed(std::string_view(&c, 1));
    for (;;) {
      auto next = reader.Next();
      EXPECT_TRUE(next.ok()) << next.status().ToString();
      if (!next.ok() || !next->has_value()) break;
      out.push_back(std::move(**next));
    }
  }
  return out;
}

TEST(AgentProtocolTest, LauncherFramesRoundTripByteByByte) {
  // Given a hello, a start with odd bytes, a signal, a stop and a heartbeat
  AgentStart start = SampleStart();
  std::string stream = EncodeHello(SampleHello()) + EncodeStart(start) + EncodeSignal(7, 15) +
                       EncodeStop(7) + EncodeLauncherHeartbeat();
  // When they are read one byte at a time
  std::vector<LauncherMessage> got = ReadLauncher(stream);
  // Then every field survives, in order
  ASSERT_EQ(got.size(), 5u);
  const auto& hello = std::get<AgentHello>(got[0]);
  EXPECT_EQ(*hello.job_key, *SampleHello().job_key);
  EXPECT_DOUBLE_EQ(hello.grace_period_s, 2.5);
  EXPECT_DOUBLE_EQ(hello.heartbeat_interval_s, 0.2);
  EXPECT_DOUBLE_EQ(hello.heartbeat_timeout_s, 3);
  EXPECT_EQ(hello.cwd, "/home/user/project");
  const auto& s = std::get<AgentStart>(got[1]);
  EXPECT_EQ(s.id, 7u);
  EXPECT_EQ(s.argv, start.argv);
  EXPECT_EQ(s.env, start.env);
  EXPECT_EQ(std::get<AgentSignal>(got[2]).signo, 15);
  EXPECT_EQ(std::get<AgentStop>(got[3]).id, 7u);
  EXPECT_TRUE(std::holds_alternative<AgentHeartbeat>(got[4]));
}

TEST(AgentProtocolTest, HelloWithoutKeyAndLauncherSecretFdIsNeverSent) {
  AgentHello h = SampleHello();
  h.job_key.reset();
  AgentStart s = SampleStart();
  s.env["HVD_SECRET_FD"] = "5";
  std::vector<LauncherMessage> got = ReadLauncher(EncodeHello(h) + EncodeStart(s));
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FALSE(std::get<AgentHello>(got[0]).job_key.has_value());
  EXPECT_EQ(std::get<AgentStart>(got[1]).env.count("HVD_SECRET_FD"), 0u);
}

TEST(AgentProtocolTest, AgentFramesRoundTrip) {
  AgentReady ready;
  ready.hostname = "node-3";
  ready.pid = 4242;
  std::string stream = EncodeReady(ready) + EncodeStarted(1, 99) + EncodeAgentHeartbeat();
  AppendOutput(1, 2, std::string("line\0bin\n", 9), &stream);
  stream += EncodeExit(1, W_EXITCODE(3, 0)) + EncodeExit(2, SIGSEGV) +
            EncodeExit(3, SIGKILL, "killed by the kernel's OOM killer (Out of memory; python3)") +
            EncodeExit(4, SIGKILL, std::string(5000, 'x'));
  AgentFrameReader reader;
  reader.Feed(stream);
  std::vector<AgentMessage> got;
  for (;;) {
    auto next = reader.Next();
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    if (!next->has_value()) break;
    got.push_back(std::move(**next));
  }
  ASSERT_EQ(got.size(), 8u);
  EXPECT_EQ(std::get<AgentReady>(got[0]).hostname, "node-3");
  EXPECT_EQ(std::get<AgentReady>(got[0]).pid, 4242u);
  EXPECT_EQ(std::get<AgentStarted>(got[1]).pid, 99u);
  EXPECT_TRUE(std::holds_alternative<AgentHeartbeat>(got[2]));
  EXPECT_EQ(std::get<AgentOutput>(got[3]).stream, 2);
  EXPECT_EQ(std::get<AgentOutput>(got[3]).data, std::string("line\0bin\n", 9));
  EXPECT_EQ(std::get<AgentExit>(got[4]).wait_status, W_EXITCODE(3, 0));
  EXPECT_EQ(std::get<AgentExit>(got[5]).wait_status, SIGSEGV);
  EXPECT_EQ(std::get<AgentExit>(got[5]).kill_cause, "");
  EXPECT_EQ(std::get<AgentExit>(got[6]).kill_cause,
            "killed by the kernel's OOM killer (Out of memory; python3)");
  EXPECT_EQ(std::get<AgentExit>(got[7]).kill_cause, std::string(kMaxKillCause, 'x'));  // cut
}

// Output longer than one frame holds (an agent's message quoting a 100 KiB argv) goes out in
// frames the reader accepts; until 2026-12-01 one frame of it ended hvdrun's session.
TEST(AgentProtocolTest, OutputLongerThanAFrameIsSplit) {
  const std::string text = std::string(100 << 10, 'a') + "end\n";
  std::string stream = EncodeReady({});
  AppendOutput(7, 2, text, &stream);
  AgentFrameReader reader;
  reader.Feed(stream);
  std::string got;
  int frames = 0;
  for (;;) {
    auto next = reader.Next();
    ASSERT_TRUE(next.ok()) << next.status().ToString();
    if (!next->has_value()) break;
    if (auto* o = std::get_if<AgentOutput>(&**next)) {
      EXPECT_EQ(o->id, 7u);
      EXPECT_LE(o->data.size(), kMaxOutputChunk);
      got += o->data;
      ++frames;
    }
  }
  EXPECT_EQ(got, text);
  EXPECT_EQ(frames, 2);
}

TEST(AgentProtocolTest, ExitFramesOfAnotherVersionOrOverlongCausesAreRefused) {
  // Version 2's exit frame had no cause: refused, not read as an exit without one
  control::ByteWriter v2;
  v2.PutU8(132);
  v2.PutU32(1);
  v2.PutU32(0);
  EXPECT_FALSE(DecodeAgentFrame(v2.data()).ok());
  control::ByteWriter long_cause;
  long_cause.PutU8(132);
  long_cause.PutU32(1);
  long_cause.PutU32(SIGKILL);
  long_cause.PutBytes(std::string(kMaxKillCause + 1, 'x'));
  auto got = DecodeAgentFrame(long_cause.data());
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("bad kill cause"), std::string::npos);
  std::string body = EncodeExit(1, SIGKILL, "why").substr(4);
  for (size_t n = 0; n < body.size(); ++n) EXPECT_FALSE(DecodeAgentFrame(body.substr(0, n)).ok());
  EXPECT_FALSE(DecodeAgentFrame(body + "x").ok()) << "trailing byte";
}

TEST(AgentProtocolTest, EveryTruncationIsAnError) {
  for (const std::string& frame : {EncodeHello(SampleHello()), EncodeStart(SampleStart())}) {
    std::string body = frame.substr(4);
    for (size_t n = 0; n < body.size(); ++n) {
      EXPECT_FALSE(DecodeLauncherFrame(body.substr(0, n)).ok()) << "prefix of " << n;
    }
    EXPECT_FALSE(DecodeLauncherFrame(body + "x").ok()) << "trailing byte";
  }
  AgentReady ready;
  ready.hostname = "h";
  std::string body = EncodeReady(ready).substr(4);
  for (size_t n = 0; n < body.size(); ++n) EXPECT_FALSE(DecodeAgentFrame(body.substr(0, n)).ok());
}

TEST(AgentProtocolTest, OversizedLengthIsRejectedBeforeBuffering) {
  LauncherFrameReader launcher;
  launcher.Feed(std::string("\x7f\xff\xff\xff", 4));
  auto got = launcher.Next();
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("exceeds the limit"), std::string::npos);
  // Agent frames are capped near one output chunk.
  AgentFrameReader agent;
  agent.Feed(std::string("\x00\x10\x00\x00", 4));  // 1 MiB
  EXPECT_FALSE(agent.Next().ok());
}

TEST(AgentProtocolTest, HelloMustComeFirstAndOnce) {
  LauncherFrameReader early;
  early.Feed(EncodeSignal(1, 15));
  auto got = early.Next();
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("hello frame first"), std::string::npos);
  LauncherFrameReader twice;
  twice.Feed(EncodeHello(SampleHello()) + EncodeHello(SampleHello()));
  ASSERT_TRUE(twice.Next().ok());
  EXPECT_FALSE(twice.Next().ok());
  AgentFrameReader no_ready;
  no_ready.Feed(EncodeExit(1, 0));
  EXPECT_FALSE(no_ready.Next().ok());
}

TEST(AgentProtocolTest, VersionMismatchSaysWhatToDo) {
  std::string body = EncodeHello(SampleHello()).substr(4);
  body[1 + 4 + 3] = 99;  // type, magic, low byte of the version
  auto got = DecodeLauncherFrame(body);
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("version 99"), std::string::npos);
  EXPECT_NE(got.status().message().find("same hvd build"), std::string::npos);
  AgentReady ready;
  ready.version = 1;
  auto old = DecodeAgentFrame(EncodeReady(ready).substr(4));
  ASSERT_FALSE(old.ok());
  EXPECT_NE(old.status().message().find("same hvd build"), std::string::npos);
}

TEST(AgentProtocolTest, UnknownTypeBadSignalBadStreamAreErrors) {
  EXPECT_FALSE(DecodeLauncherFrame(std::string("\x09", 1)).ok());
  EXPECT_FALSE(DecodeLauncherFrame(EncodeSignal(1, 0).substr(4)).ok());
  EXPECT_FALSE(DecodeLauncherFrame(EncodeSignal(1, 256).substr(4)).ok());
  std::string bad_stream;
  AppendOutput(1, 3, "x", &bad_stream);
  EXPECT_FALSE(DecodeAgentFrame(bad_stream.substr(4)).ok());
  EXPECT_FALSE(DecodeAgentFrame(std::string("\x05", 1)).ok());  // a launcher type
}

TEST(AgentProtocolTest, InvalidEnvironmentNameIsRejected) {
  AgentStart s = SampleStart();
  s.env["A=B"] = "x";
  auto got = DecodeLauncherFrame(EncodeStart(s).substr(4));
  ASSERT_FALSE(got.ok());
  EXPECT_NE(got.status().message().find("A=B"), std::string::npos);
}

}  // namespace
}  // namespace hvd::launcher
