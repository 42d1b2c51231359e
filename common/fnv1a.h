#ifndef HVD_COMMON_FNV1A_H_
#define HVD_COMMON_FNV1A_H_

#include <cstdint>
#include <string_view>

namespace hvd {

inline constexpr uint64_t kFnv1aOffset = 0xcbf29ce484222325ULL;

// 64-bit FNV-1a of `text`, continuing from `hash`: a stable, non-cryptographic hash for names
// and cache keys (shared-memory segment names, the autotune cache's model signature). Never for
// anything an attacker picks against a secret: that is HMAC-SHA-256 (common/hmac.h).
inline uint64_t Fnv1a(std::string_view text, uint64_t hash = kFnv1aOffset) {
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace hvd

#endif  // HVD_COMMON_FNV1A_H_
