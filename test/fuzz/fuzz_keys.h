#ifndef HVD_TEST_FUZZ_FUZZ_KEYS_H_
#define HVD_TEST_FUZZ_FUZZ_KEYS_H_

#include <string_view>

#include "common/frame.h"

// The fixed job key, job id and nonces of the control-channel targets and of the seed frames
// make_seeds writes with them: frames in the corpus carry tags that verify under these keys,
// so the fuzzer starts past the tag check.
namespace hvd::fuzz {

inline constexpr std::string_view kFuzzJobId = "fuzz-job";

inline control::JobKey FuzzJobKey() {
  control::JobKey key{};
  for (size_t i = 0; i < key.size(); ++i) key[i] = static_cast<uint8_t>(0xa5 ^ i);
  return key;
}

inline control::Nonce FuzzNonce(uint8_t seed) {
  control::Nonce nonce{};
  for (size_t i = 0; i < nonce.size(); ++i) nonce[i] = static_cast<uint8_t>(seed + 7 * i);
  return nonce;
}
inline control::Nonce FuzzClientNonce() { return FuzzNonce(1); }
inline control::Nonce FuzzServerNonce() { return FuzzNonce(2); }

inline control::SessionKeys FuzzSessionKeys() {
  return control::DeriveSessionKeys(FuzzJobKey(), kFuzzJobId, FuzzClientNonce(), FuzzServerNonce());
}

}  // namespace hvd::fuzz

#endif  // HVD_TEST_FUZZ_FUZZ_KEYS_H_
