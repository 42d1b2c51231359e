#ifndef HVD_COMMON_HMAC_H_
#define HVD_COMMON_HMAC_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

// HMAC-SHA256 (RFC 2104 / FIPS 198-1) through OpenSSL's EVP_MAC, and a constant-time tag
// comparison. Stateless free functions; safe to call from any thread.
namespace hvd::control {

inline constexpr size_t kMacBytes = 32;
using MacTag = std::array<uint8_t, kMacBytes>;
// Keys derived by the control channel are themselves 32-byte HMAC outputs.
using MacKey = std::array<uint8_t, kMacBytes>;

using ByteSpan = std::span<const uint8_t>;

inline ByteSpan AsBytes(std::string_view s) {
  return {reinterpret_cast<const uint8_t*>(s.data()), s.size()};
}

// HMAC-SHA256(key, parts[0] | parts[1] | ...). Any key length is accepted (RFC 2104 hashes
// keys longer than the block size). OpenSSL failure here is only possible on allocation
// failure and aborts through HVD_CHECK.
MacTag HmacSha256(ByteSpan key, std::initializer_list<ByteSpan> parts);

// Compares `expected` with `actual` in time independent of where they differ
// (CRYPTO_memcmp). A length mismatch is false.
bool MacEquals(const MacTag& expected, ByteSpan actual);

}  // namespace hvd::control

#endif  // HVD_COMMON_HMAC_H_
