#include "runtime/transports/tcp/tcp_handshake.h"

#include <openssl/rand.h>

#include <algorithm>
#include <cstring>
#include <string_view>

#include "common/check.h"
#include "common/printable.h"

namespace hvd::runtime {
namespace {

constexpr char kMagic[8] = {'H', 'V', 'D', 'T', 'C', 'P', '\0', '\0'};
constexpr uint32_t kVersion = 1;

void PutU32(uint8_t* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint32_t GetU32(const uint8_t* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}

// Length-prefixed job id and scope, then the ordered rank pair and the group size.
std::string ContextBytes(const HandshakeContext& ctx, const Hello& hello) {
  std::string out;
  uint8_t word[4];
  for (std::string_view s : {std::string_view(ctx.job_id), std::string_view(ctx.scope)}) {
    PutU32(word, static_cast<uint32_t>(s.size()));
    out.append(reinterpret_cast<const char*>(word), 4);
    out.append(s);
  }
  for (uint32_t v : {hello.from, hello.to, hello.size}) {
    PutU32(word, v);
    out.append(reinterpret_cast<const char*>(word), 4);
  }
  return out;
}

}  // namespace

Nonce NewNonce() {
  Nonce nonce{};
  HVD_CHECK(RAND_bytes(nonce.data(), static_cast<int>(nonce.size())) == 1)
      << "OpenSSL RAND_bytes failed";
  return nonce;
}

std::array<uint8_t, kHelloBytes> EncodeHello(const Hello& hello) {
  std::array<uint8_t, kHelloBytes> out{};
  std::memcpy(out.data(), kMagic, sizeof(kMagic));
  PutU32(out.data() + 8, kVersion);
  PutU32(out.data() + 12, hello.from);
  PutU32(out.data() + 16, hello.to);
  PutU32(out.data() + 20, hello.size);
  std::memcpy(out.data() + 24, hello.nonce.data(), kNonceBytes);
  return out;
}

std::optional<Hello> DecodeHello(const uint8_t* bytes) {
  if (std::memcmp(bytes, kMagic, sizeof(kMagic)) != 0 || GetU32(bytes + 8) != kVersion) {
    return std::nullopt;
  }
  Hello hello;
  hello.from = GetU32(bytes + 12);
  hello.to = GetU32(bytes + 16);
  hello.size = GetU32(bytes + 20);
  std::memcpy(hello.nonce.data(), bytes + 24, kNonceBytes);
  return hello;
}

control::MacTag AcceptorTag(const HandshakeContext& ctx, const Hello& hello, const Nonce& nonce_a) {
  const std::string context = ContextBytes(ctx, hello);
  return control::HmacSha256(ctx.key, {control::AsBytes("hvd-tcp-accept"),
                                       control::AsBytes(context), hello.nonce, nonce_a});
}

control::MacTag ConnectorTag(const HandshakeContext& ctx, const Hello& hello,
                             const Nonce& nonce_a) {
  const std::string context = ContextBytes(ctx, hello);
  return control::HmacSha256(ctx.key, {control::AsBytes("hvd-tcp-connect"),
                                       control::AsBytes(context), nonce_a, hello.nonce});
}

AcceptorHandshake::AcceptorHandshake(const HandshakeContext& ctx, int rank, int size,
                                     const Nonce& nonce_a)
    : ctx_(&ctx),
      rank_(static_cast<uint32_t>(rank)),
      size_(static_cast<uint32_t>(size)),
      nonce_a_(nonce_a) {}

size_t AcceptorHandshake::want() const {
  switch (stage_) {
    case Stage::kHello:
      return kHelloBytes;
    case Stage::kProof:
      return kProofBytes;
    case Stage::kOver:
      break;
  }
  return 0;
}

AcceptorHandshake::Step AcceptorHandshake::Feed(const uint8_t* bytes) {
  HVD_CHECK(stage_ != Stage::kOver) << "AcceptorHandshake fed after it ended";
  Step step;
  if (stage_ == Stage::kHello) {
    stage_ = Stage::kOver;
    std::optional<Hello> hello = DecodeHello(bytes);
    if (!hello) {
      step.refused = "not an hvd data connection";
      return step;
    }
    // Only a higher rank of this group connects to this one.
    if (hello->to != rank_ || hello->size != size_ || hello->from <= rank_ ||
        hello->from >= size_) {
      step.refused = "unexpected ranks (from " + std::to_string(hello->from) + " to " +
                     std::to_string(hello->to) + " of " + std::to_string(hello->size) + ")";
      return step;
    }
    hello_ = *hello;
    stage_ = Stage::kProof;
    const control::MacTag tag = AcceptorTag(*ctx_, hello_, nonce_a_);
    step.send.assign(nonce_a_.begin(), nonce_a_.end());
    step.send.insert(step.send.end(), tag.begin(), tag.end());
    return step;
  }
  stage_ = Stage::kOver;
  if (!control::MacEquals(ConnectorTag(*ctx_, hello_, nonce_a_), {bytes, kProofBytes})) {
    step.refused = "authentication failed (wrong job key, job or scope) for claimed rank " +
                   std::to_string(hello_.from);
    return step;
  }
  step.authenticated = true;
  return step;
}

std::optional<control::MacTag> AnswerReply(const HandshakeContext& ctx, const Hello& hello,
                                           const uint8_t* reply) {
  Nonce nonce_a;
  std::memcpy(nonce_a.data(), reply, kNonceBytes);
  if (!control::MacEquals(AcceptorTag(ctx, hello, nonce_a),
                          {reply + kNonceBytes, control::kMacBytes})) {
    return std::nullopt;
  }
  return ConnectorTag(ctx, hello, nonce_a);
}

std::string PeerAddress::Name(int rank) const {
  return "rank " + std::to_string(rank) + " (" + hostname + " " + host + ":" +
         std::to_string(port) + ")";
}

namespace {

// A byte that cannot be part of a word of a data address: whitespace or a control byte.
bool NotInWord(char c) { return static_cast<unsigned char>(c) <= ' ' || c == '\x7f'; }

}  // namespace

std::string EncodePeerAddress(const std::string& host, int port, const std::string& hostname) {
  std::string name = hostname.empty() ? "?" : hostname;
  std::replace_if(name.begin(), name.end(), NotInWord, '_');
  return host + " " + std::to_string(port) + " " + name;
}

Result<PeerAddress> ParsePeerAddress(const std::string& value, int rank) {
  auto refuse = [&] {
    return Status::RemoteError("malformed data address of rank " + std::to_string(rank) + ": '" +
                               Printable(value, 200) + "'");
  };
  const size_t first = value.find(' ');
  const size_t second = first == std::string::npos ? first : value.find(' ', first + 1);
  if (first == std::string::npos || second == std::string::npos) return refuse();
  PeerAddress a;
  a.host = value.substr(0, first);
  const std::string port = value.substr(first + 1, second - first - 1);
  a.hostname = value.substr(second + 1);
  auto word = [](const std::string& w) {
    return !w.empty() && std::none_of(w.begin(), w.end(), NotInWord);
  };
  if (!word(a.host) || !word(a.hostname) || port.empty() || port.size() > 5 ||
      port.find_first_not_of("0123456789") != std::string::npos || port[0] == '0') {
    return refuse();
  }
  a.port = std::stoi(port);
  if (a.port > 65535) return refuse();
  return a;
}

}  // namespace hvd::runtime
