#include "common/hmac.h"

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "common/check.h"

namespace hvd::control {
namespace {

// The fetched algorithm is immutable and reference-counted, so one process-wide instance is
// shared by all threads (OpenSSL guarantees fetched objects are thread-safe to use).
EVP_MAC* HmacAlgorithm() {
  static EVP_MAC* const mac = EVP_MAC_fetch(nullptr, "HMAC", nullptr);
  HVD_CHECK(mac != nullptr) << "OpenSSL has no HMAC implementation";
  return mac;
}

}  // namespace

MacTag HmacSha256(ByteSpan key, std::initializer_list<ByteSpan> parts) {
  EVP_MAC_CTX* ctx = EVP_MAC_CTX_new(HmacAlgorithm());
  HVD_CHECK(ctx != nullptr) << "EVP_MAC_CTX_new failed";
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end(),
  };
  // EVP_MAC_init rejects a null key pointer even for length 0.
  static const uint8_t kEmpty[1] = {0};
  const uint8_t* key_data = key.empty() ? kEmpty : key.data();
  HVD_CHECK(EVP_MAC_init(ctx, key_data, key.size(), params) == 1) << "EVP_MAC_init failed";
  for (ByteSpan part : parts) {
    if (part.empty()) continue;
    HVD_CHECK(EVP_MAC_update(ctx, part.data(), part.size()) == 1) << "EVP_MAC_update failed";
  }
  MacTag tag{};
  size_t written = 0;
  HVD_CHECK(EVP_MAC_final(ctx, tag.data(), &written, tag.size()) == 1) << "EVP_MAC_final failed";
  HVD_CHECK_EQ(written, tag.size());
  EVP_MAC_CTX_free(ctx);
  return tag;
}

bool MacEquals(const MacTag& expected, ByteSpan actual) {
  if (actual.size() != expected.size()) return false;
  return CRYPTO_memcmp(expected.data(), actual.data(), expected.size()) == 0;
}

}  // namespace hvd::control
