// Target "tcp_handshake": what a rank's data port reads from whoever connects to it, and what
// a connecting rank reads back (runtime/transports/tcp/tcp_handshake.h): AcceptorHandshake, the
// acceptor's side the mesh drives, and AnswerReply, the connector's check of the challenge.
//
// Input: a mode byte, a byte each choosing the acceptor's group size (1-16) and rank, then the
// peer's bytes. Mode bit 0: the connector's side (the bytes are a hello's fields and the
// acceptor's reply); else the acceptor's (a hello, then a proof). Bit 1 re-signs what the
// bytes carry under the fuzz key (the proof for the hello and challenge, or the reply's tag),
// so mutations reach what lies past the MAC; bit 2 then flips one bit of it.
//
// Checked: a connection is authenticated only with the proof ConnectorTag gives, from a
// higher rank of the group addressing this one, and what it sent re-encodes to the bytes
// read; the challenge the acceptor sends is one the connector answers with exactly that
// proof; a reply the connector accepts carries AcceptorTag, and is refused for another scope.
#include <algorithm>
#include <cstring>

#include "common/check.h"
#include "runtime/transports/tcp/tcp_handshake.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_keys.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {
namespace {

using runtime::AcceptorHandshake;
using runtime::HandshakeContext;
using runtime::Hello;
using runtime::Nonce;

// `n` bytes of the input, zero-padded when it runs out.
std::vector<uint8_t> Bytes(FuzzInput& in, size_t n) {
  std::string_view piece = in.Take(n);
  std::vector<uint8_t> out(piece.begin(), piece.end());
  out.resize(n, 0);
  return out;
}

HandshakeContext Context(std::string scope) {
  return {FuzzJobKey(), std::string(kFuzzJobId), std::move(scope)};
}

void Flip(std::vector<uint8_t>* bytes, uint8_t which) {
  (*bytes)[which % bytes->size()] ^= static_cast<uint8_t>(1u << (which % 8));
}

void Connector(FuzzInput& in, uint8_t mode, std::string* outcome) {
  const HandshakeContext ctx = Context("global");
  Hello hello;
  const std::vector<uint8_t> fields = Bytes(in, 12);
  std::memcpy(&hello.from, fields.data(), 4);
  std::memcpy(&hello.to, fields.data() + 4, 4);
  std::memcpy(&hello.size, fields.data() + 8, 4);
  hello.nonce = FuzzClientNonce();
  std::vector<uint8_t> reply = Bytes(in, runtime::kReplyBytes);
  if (mode & 2) {
    Nonce nonce_a;
    std::memcpy(nonce_a.data(), reply.data(), runtime::kNonceBytes);
    const control::MacTag tag = runtime::AcceptorTag(ctx, hello, nonce_a);
    std::copy(tag.begin(), tag.end(), reply.begin() + runtime::kNonceBytes);
    if (mode & 4) Flip(&reply, in.Byte());
  }
  const std::optional<control::MacTag> proof = runtime::AnswerReply(ctx, hello, reply.data());
  if (!proof) {
    Note(outcome, "reply refused");
    return;
  }
  Nonce nonce_a;
  std::memcpy(nonce_a.data(), reply.data(), runtime::kNonceBytes);
  const control::MacTag tag = runtime::AcceptorTag(ctx, hello, nonce_a);
  HVD_CHECK(std::equal(tag.begin(), tag.end(), reply.begin() + runtime::kNonceBytes))
      << "a reply without the acceptor's tag was accepted";
  HVD_CHECK(*proof == runtime::ConnectorTag(ctx, hello, nonce_a));
  HVD_CHECK(!runtime::AnswerReply(Context("global/1"), hello, reply.data()))
      << "a reply made for one scope was accepted for another";
}

void Acceptor(FuzzInput& in, uint8_t mode, int rank, int size, std::string* outcome) {
  const HandshakeContext ctx = Context("global");
  const Nonce nonce_a = FuzzServerNonce();
  AcceptorHandshake handshake(ctx, rank, size, nonce_a);
  HVD_CHECK_EQ(handshake.want(), runtime::kHelloBytes);
  const std::vector<uint8_t> hello_bytes = Bytes(in, runtime::kHelloBytes);
  AcceptorHandshake::Step step = handshake.Feed(hello_bytes.data());
  if (!step.refused.empty()) {
    HVD_CHECK(step.send.empty() && !step.authenticated);
    HVD_CHECK_EQ(handshake.want(), 0u);
    Note(outcome, step.refused);
    return;
  }
  const std::optional<Hello> hello = runtime::DecodeHello(hello_bytes.data());
  HVD_CHECK(hello.has_value()) << "a hello that does not decode was answered";
  const auto again = runtime::EncodeHello(*hello);
  HVD_CHECK(std::equal(again.begin(), again.end(), hello_bytes.begin()))
      << "the hello does not re-encode to the bytes read";
  HVD_CHECK(hello->to == static_cast<uint32_t>(rank) &&
            hello->size == static_cast<uint32_t>(size) &&
            hello->from > static_cast<uint32_t>(rank) && hello->from < static_cast<uint32_t>(size))
      << "a hello from " << hello->from << " to " << hello->to << " of " << hello->size
      << " was answered by rank " << rank << " of " << size;
  HVD_CHECK_EQ(handshake.from(), static_cast<int>(hello->from));
  // The challenge is the connector's to answer, with the proof the acceptor then checks.
  HVD_CHECK_EQ(step.send.size(), runtime::kReplyBytes);
  const std::optional<control::MacTag> answer = runtime::AnswerReply(ctx, *hello, step.send.data());
  const control::MacTag expected = runtime::ConnectorTag(ctx, *hello, nonce_a);
  HVD_CHECK(answer && *answer == expected) << "the connector does not answer the challenge";
  HVD_CHECK_EQ(handshake.want(), runtime::kProofBytes);
  std::vector<uint8_t> proof = Bytes(in, runtime::kProofBytes);
  if (mode & 2) {
    proof.assign(expected.begin(), expected.end());
    if (mode & 4) Flip(&proof, in.Byte());
  }
  step = handshake.Feed(proof.data());
  HVD_CHECK(step.send.empty());
  HVD_CHECK_EQ(handshake.want(), 0u);
  const bool right = std::equal(proof.begin(), proof.end(), expected.begin());
  HVD_CHECK_EQ(step.authenticated, right) << "the proof's check disagrees with ConnectorTag";
  HVD_CHECK_EQ(step.refused.empty(), right);
  Note(outcome, step.refused);
}

}  // namespace

std::string FuzzTcpHandshake(std::string_view input) {
  FuzzInput in(input);
  const uint8_t mode = in.Byte();
  const int size = 1 + in.Byte() % 16;
  const int rank = in.Byte() % size;
  std::string outcome;
  if (mode & 1) {
    Connector(in, mode, &outcome);
  } else {
    Acceptor(in, mode, rank, size, &outcome);
  }
  return outcome;
}

}  // namespace hvd::fuzz
