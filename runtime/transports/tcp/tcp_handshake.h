#ifndef HVD_RUNTIME_TRANSPORTS_TCP_TCP_HANDSHAKE_H_
#define HVD_RUNTIME_TRANSPORTS_TCP_TCP_HANDSHAKE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>

#include "common/hmac.h"
#include "common/job_key.h"

namespace hvd::runtime {

// The mutual HMAC-SHA256 challenge/response that authenticates one data connection of the
// TCP communicator (runtime/tcp_communicator.h). Pure functions over fixed-size messages;
// the mesh (tcp_mesh.cc) moves the bytes.
//
//   connector (higher rank) -> acceptor:  Hello  = magic | version | from | to | size | nonce_c
//   acceptor -> connector:                Reply  = nonce_a | HMAC(key, "accept"  | ctx | nonce_c |
//   nonce_a) connector -> acceptor:                Proof  = HMAC(key, "connect" | ctx | nonce_a |
//   nonce_c) acceptor -> connector:                one byte kHandshakeOk
//
// ctx = job id, group scope, from rank, to rank and group size (length-prefixed), so a tag is
// valid only for this job, this group and this ordered pair of ranks; fresh 32-byte nonces on
// both sides defeat replay. Either side that sees a wrong tag closes the connection.
inline constexpr size_t kNonceBytes = 32;
using Nonce = std::array<uint8_t, kNonceBytes>;

inline constexpr size_t kHelloBytes = 8 + 4 + 4 + 4 + 4 + kNonceBytes;
inline constexpr size_t kReplyBytes = kNonceBytes + control::kMacBytes;
inline constexpr size_t kProofBytes = control::kMacBytes;
inline constexpr uint8_t kHandshakeOk = 0x5a;

struct Hello {
  uint32_t from = 0;
  uint32_t to = 0;
  uint32_t size = 0;
  Nonce nonce{};
};

// What both ends know independently of the wire.
struct HandshakeContext {
  control::JobKey key{};
  std::string job_id;
  std::string scope;
};

// A fresh random nonce (OpenSSL RAND_bytes; aborts through HVD_CHECK if the CSPRNG fails).
Nonce NewNonce();

std::array<uint8_t, kHelloBytes> EncodeHello(const Hello& hello);
// nullopt when the magic or version does not match (a stray, non-hvd connection).
std::optional<Hello> DecodeHello(const uint8_t* bytes);

control::MacTag AcceptorTag(const HandshakeContext& ctx, const Hello& hello, const Nonce& nonce_a);
control::MacTag ConnectorTag(const HandshakeContext& ctx, const Hello& hello, const Nonce& nonce_a);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_TCP_TCP_HANDSHAKE_H_
