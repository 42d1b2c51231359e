#ifndef HVD_RUNTIME_TRANSPORTS_TCP_TCP_HANDSHAKE_H_
#define HVD_RUNTIME_TRANSPORTS_TCP_TCP_HANDSHAKE_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/hmac.h"
#include "common/job_key.h"
#include "common/status.h"

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

// The acceptor's side of one incoming connection, which anyone who can reach the rank's port
// may open: fed the bytes as they arrive (want() of them at a time; the mesh reads them), it
// says what to send and whether the peer is refused or proved to be rank from(). The
// decisions live here, apart from the sockets, so that the fuzz target (docs/fuzzing.md)
// drives the same code the mesh does. `ctx` must outlive it.
class AcceptorHandshake {
 public:
  // `rank` and `size`: this rank and its group's size; `nonce_a`: the challenge (NewNonce()).
  AcceptorHandshake(const HandshakeContext& ctx, int rank, int size, const Nonce& nonce_a);

  struct Step {
    std::string refused;         // non-empty: close the connection; why, for the log
    std::vector<uint8_t> send;   // bytes to send the peer (the challenge, after its hello)
    bool authenticated = false;  // the proof holds: the connection is rank from()'s
  };
  // How many bytes Feed takes next: the hello, then the proof; 0 once refused or done.
  size_t want() const;
  // `bytes` holds want() bytes.
  Step Feed(const uint8_t* bytes);
  // The rank the peer claims (after its hello; proved once Feed said authenticated).
  int from() const { return static_cast<int>(hello_.from); }

 private:
  enum class Stage { kHello, kProof, kOver };
  const HandshakeContext* ctx_;
  uint32_t rank_, size_;
  Nonce nonce_a_;
  Hello hello_;
  Stage stage_ = Stage::kHello;
};

// The connector's check of the acceptor's reply (kReplyBytes: its nonce and tag) to `hello`:
// the proof to send back, or nullopt when the tag is not this job's, scope's and ranks'.
std::optional<control::MacTag> AnswerReply(const HandshakeContext& ctx, const Hello& hello,
                                           const uint8_t* reply);

// Where a rank's data listener is, as it publishes it in the rendezvous store under
// "<scope>/tcp/<rank>": "<numeric host> <port> <host name>", one space apart. Any member that
// can write the store could put anything there, so a peer's value is read strictly.
struct PeerAddress {
  std::string host;                  // numeric: getaddrinfo with AI_NUMERICHOST connects to it
  int port = 0;                      // 1..65535
  std::string hostname;              // for messages only
  std::string Name(int rank) const;  // "rank 3 (node2 10.0.0.2:41234)"
};

// The value a rank publishes; whitespace and control bytes in `hostname` become '_' ("?" when
// empty), so the value reads back as three words.
std::string EncodePeerAddress(const std::string& host, int port, const std::string& hostname);

// Exactly three non-empty words one space apart, the port a canonical decimal in 1..65535;
// anything else is refused naming `rank`.
Result<PeerAddress> ParsePeerAddress(const std::string& value, int rank);

}  // namespace hvd::runtime

#endif  // HVD_RUNTIME_TRANSPORTS_TCP_TCP_HANDSHAKE_H_
