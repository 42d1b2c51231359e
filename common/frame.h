#ifndef HVD_COMMON_FRAME_H_
#define HVD_COMMON_FRAME_H_

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

#include "common/hmac.h"
#include "common/job_key.h"

// The hvd control-channel wire protocol (version 1), spoken between hvdrun's rendezvous
// server (launcher/rendezvous/rendezvous_server.h) and KvClient (common/kv_client.h). Everything
// here is pure (no sockets) so it is unit-tested byte by byte.
//
// Frame: a 20-byte header, the body, and a 32-byte tag. All integers are big-endian.
//
//   offset  size  field
//        0     4  magic    0x48564443 ("HVDC")
//        4     1  version  1
//        5     1  type     FrameType
//        6     2  flags    0 (reserved; a non-zero value is malformed)
//        8     4  body length in bytes (capped; 16 MiB by default)
//       12     8  sequence number
//       20     n  body     (fields per type: common/kv_messages.h, EncodeHello below)
//     20+n    32  tag      HMAC-SHA256(K, header | body)
//
// Keys (`job_key` is the per-job 256-bit secret, common/job_key.h):
//   K_hello = HMAC(job_key, "hvd-v1 hello")
//   K_c2s   = HMAC(job_key, "hvd-v1 session c2s" | u32 len | job_id | client_nonce | server_nonce)
//   K_s2c   = HMAC(job_key, "hvd-v1 session s2c" | u32 len | job_id | client_nonce | server_nonce)
//
// Handshake (nonces are 32 bytes from RAND_bytes, fresh per connection):
//   C->S  kHello       seq 0  body: client_nonce[32] | bytes job_id      tag under K_hello
//   S->C  kServerHello seq 0  body: server_nonce[32]                     tag under K_s2c
//     or  kReject      seq 0  body: bytes reason                         tag all zero
//   C->S  kAuth        seq 1  empty body                                 tag under K_c2s
//   S->C  kAuthOk      seq 1  empty body                                 tag under K_s2c
// The server checks the hello tag (wrong key -> reject) and the job id. The client checks the
// server hello under K_s2c, which proves the server holds the key and saw this client's
// nonce (mutual authentication). kAuth proves the client holds the key for this server
// nonce, so a recorded hello replayed on a new connection goes no further. kReject is
// unauthenticated on purpose: it can only make a client fail, which anyone on the path can do
// anyway, and it lets a client with a wrong key say so instead of "connection closed".
//
// After the handshake every frame is a request (C->S, seq 2, 3, ...) or a kResponse (S->C,
// seq 2, 3, ...), strictly alternating, tagged under the direction's session key. A receiver
// accepts only the exact next sequence number: a replayed or reordered frame on the same
// connection has a valid tag but the wrong number; a frame from another connection (or the
// other direction) fails the tag because the nonces, and so the keys, differ. A frame whose
// announced length exceeds the cap is refused before its body is read.
namespace hvd::control {

inline constexpr uint32_t kFrameMagic = 0x48564443;
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr size_t kFrameHeaderBytes = 20;
inline constexpr size_t kFrameTagBytes = kMacBytes;
inline constexpr uint32_t kDefaultMaxFrameBytes = 16u << 20;
inline constexpr size_t kNonceBytes = 32;
inline constexpr size_t kMaxJobIdBytes = 256;
// Cap on handshake bodies, whatever the configured frame cap.
inline constexpr uint32_t kMaxHandshakeBodyBytes = 1024;

enum class FrameType : uint8_t {
  kHello = 1,
  kServerHello = 2,
  kAuth = 3,
  kAuthOk = 4,
  kReject = 5,
  kSet = 16,
  kGet = 17,
  kWait = 18,
  kAdd = 19,
  kDelete = 20,
  kFinishScope = 21,
  kResponse = 32,
};

bool IsKnownFrameType(uint8_t type);
bool IsRequestType(FrameType type);
const char* FrameTypeName(FrameType type);

struct FrameHeader {
  FrameType type = FrameType::kResponse;
  uint16_t flags = 0;
  uint32_t body_length = 0;
  uint64_t sequence = 0;
};

struct Frame {
  FrameHeader header;
  std::string body;
};

// Why a frame was refused; the server counts each kind separately.
enum class FrameFault : uint8_t {
  kNone,
  kMalformed,      // bad magic, version, type, flags, or a body that does not parse
  kOversize,       // announced body length above the cap
  kTruncated,      // fewer bytes than the header announced
  kBadTag,         // HMAC mismatch: wrong key, tampering, or a frame from another connection
  kOutOfSequence,  // valid tag, wrong sequence number: replayed or reordered
};
const char* FrameFaultName(FrameFault fault);

// Outcome of a decode step: kNone, or a fault with a human-readable detail.
struct FrameCheck {
  FrameFault fault = FrameFault::kNone;
  std::string detail;
  bool ok() const { return fault == FrameFault::kNone; }
};

using Nonce = std::array<uint8_t, kNonceBytes>;

std::string EncodeHeader(const FrameHeader& header);
// Parses the first kFrameHeaderBytes of `bytes` and checks magic, version, type, flags and
// body_length <= max_body.
FrameCheck DecodeHeader(std::string_view bytes, uint32_t max_body, FrameHeader* out);

// header | body | HMAC(key, header | body).
std::string EncodeFrame(const MacKey& key, FrameType type, uint64_t sequence,
                        std::string_view body);
// Splits a complete frame (header + body + tag) without checking the tag. A frame shorter than
// its header announces is kTruncated; a longer one is kMalformed.
FrameCheck ParseFrame(std::string_view frame, uint32_t max_body, Frame* out);
// Constant-time check of the trailing tag of a complete frame.
bool FrameTagValid(const MacKey& key, std::string_view frame);

// One direction pair of an established connection: seals outgoing frames with the next send
// sequence and opens incoming ones, enforcing tag and exact next sequence. Not synchronized.
class FrameChannel {
 public:
  FrameChannel(const MacKey& send_key, const MacKey& recv_key, uint64_t next_send,
               uint64_t next_recv, uint32_t max_body);

  std::string Seal(FrameType type, std::string_view body);
  // On success advances the receive sequence. A fault leaves the channel unusable by contract
  // (the caller closes the connection).
  FrameCheck Open(std::string_view frame, Frame* out);

  uint32_t max_body() const { return max_body_; }

 private:
  MacKey send_key_;
  MacKey recv_key_;
  uint64_t next_send_;
  uint64_t next_recv_;
  uint32_t max_body_;
};

// --- Handshake pieces ---------------------------------------------------------------------

struct SessionKeys {
  MacKey client_to_server;
  MacKey server_to_client;
};

Nonce NewNonce();  // RAND_bytes; aborts only if the OS CSPRNG is unavailable
MacKey HelloKey(const JobKey& job_key);
SessionKeys DeriveSessionKeys(const JobKey& job_key, std::string_view job_id,
                              const Nonce& client_nonce, const Nonce& server_nonce);

struct Hello {
  Nonce client_nonce{};
  std::string job_id;
};
std::string EncodeHello(const Hello& hello);
FrameCheck DecodeHello(std::string_view body, Hello* out);

std::string EncodeServerHello(const Nonce& server_nonce);
FrameCheck DecodeServerHello(std::string_view body, Nonce* out);

// kReject frames carry an all-zero tag (see the protocol notes above).
std::string EncodeReject(std::string_view reason);

}  // namespace hvd::control

#endif  // HVD_COMMON_FRAME_H_
