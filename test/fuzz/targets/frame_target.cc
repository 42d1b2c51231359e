// Target "frame": one control-channel frame as the rendezvous server and KvClient read it
// (common/frame.h): header checks, the split into header/body/tag, the tag check, the
// handshake bodies, and a session channel's Open.
//
// Input: a mode byte, then the frame's bytes. Mode bit 0: the handshake's body limit (else the
// session's); bit 1: replace the frame's last 32 bytes by a tag that verifies (under the hello
// key in handshake mode, else the session's receive key), so mutations reach the checks behind
// the tag; bit 2: the receiver is the server (client-to-server key) rather than the client.
#include "common/check.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_keys.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

using control::AsBytes;
using control::DecodeHeader;
using control::DecodeHello;
using control::DecodeServerHello;
using control::EncodeFrame;
using control::EncodeHello;
using control::EncodeServerHello;
using control::Frame;
using control::FrameChannel;
using control::FrameCheck;
using control::FrameHeader;
using control::FrameTagValid;
using control::HelloKey;
using control::HmacSha256;
using control::kDefaultMaxFrameBytes;
using control::kFrameHeaderBytes;
using control::kFrameTagBytes;
using control::kMaxHandshakeBodyBytes;
using control::MacKey;
using control::MacTag;
using control::ParseFrame;
using control::SessionKeys;

void Resign(const MacKey& key, std::string* frame) {
  if (frame->size() < kFrameHeaderBytes + kFrameTagBytes) return;
  frame->resize(frame->size() - kFrameTagBytes);
  MacTag tag = HmacSha256(key, {AsBytes(*frame)});
  frame->append(reinterpret_cast<const char*>(tag.data()), tag.size());
}

// The handshake bodies a frame of this type carries; each decoded body re-encodes to itself.
void DecodeBodies(const Frame& frame, std::string* outcome) {
  control::Hello hello;
  FrameCheck check = DecodeHello(frame.body, &hello);
  Note(outcome, check.detail);
  if (check.ok()) HVD_CHECK(EncodeHello(hello) == frame.body) << "hello does not round-trip";
  control::Nonce nonce{};
  check = DecodeServerHello(frame.body, &nonce);
  Note(outcome, check.detail);
  if (check.ok()) HVD_CHECK(EncodeServerHello(nonce) == frame.body);
}

}  // namespace

std::string FuzzFrame(std::string_view input) {
  FuzzInput in(input);
  const uint8_t mode = in.Byte();
  const bool handshake = mode & 1, resign = mode & 2, at_server = mode & 4;
  std::string frame(in.Rest());
  const uint32_t max_body = handshake ? kMaxHandshakeBodyBytes : kDefaultMaxFrameBytes;
  const SessionKeys keys = FuzzSessionKeys();
  const MacKey hello_key = HelloKey(FuzzJobKey());
  const MacKey& recv_key = at_server ? keys.client_to_server : keys.server_to_client;
  if (resign) Resign(handshake ? hello_key : recv_key, &frame);

  std::string outcome;
  FrameHeader header;
  FrameCheck check = DecodeHeader(frame, max_body, &header);
  Note(&outcome, check.detail);
  Frame parsed;
  check = ParseFrame(frame, max_body, &parsed);
  Note(&outcome, check.detail);
  if (!check.ok()) return outcome;
  HVD_CHECK_EQ(parsed.body.size(), static_cast<size_t>(parsed.header.body_length));
  if (!FrameTagValid(hello_key, frame)) Note(&outcome, "hello tag does not verify");
  DecodeBodies(parsed, &outcome);

  // A receiving channel that expects sequence 2 (the first request or response).
  FrameChannel channel(recv_key, recv_key, 2, 2, max_body);
  Frame opened;
  check = channel.Open(frame, &opened);
  Note(&outcome, check.detail);
  if (resign && !handshake && parsed.header.sequence == 2) {
    HVD_CHECK(check.ok()) << "a correctly tagged in-sequence frame was refused: " << check.detail;
  }
  if (check.ok()) {
    HVD_CHECK(EncodeFrame(recv_key, opened.header.type, opened.header.sequence, opened.body) ==
              frame)
        << "an opened frame does not re-encode to its bytes";
  }
  return outcome;
}

}  // namespace hvd::fuzz
