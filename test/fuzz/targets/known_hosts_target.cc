// Target "known_hosts": the "@revoked" lines of an OpenSSH known_hosts file
// (launcher/ssh/ssh_known_hosts.h, RevokedKeys), which decide whether a host's key is refused
// before anything else. The input is the file's text. Every key found re-encodes (base64) to a
// revoked line that gives that key again, alone.
#include <openssl/evp.h>

#include "common/check.h"
#include "launcher/ssh/ssh_known_hosts.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzKnownHosts(std::string_view input) {
  std::string outcome;
  const std::vector<std::string> keys = launcher::RevokedKeys(input);
  if (keys.empty()) Note(&outcome, "no revoked key");
  for (const std::string& key : keys) {
    HVD_CHECK(key.size() <= input.size());
    std::string encoded(4 * ((key.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(encoded.data()),
                                  reinterpret_cast<const unsigned char*>(key.data()),
                                  static_cast<int>(key.size()));
    encoded.resize(static_cast<size_t>(n));
    if (encoded.empty()) continue;  // an empty key has no line of its own
    const std::vector<std::string> again =
        launcher::RevokedKeys("@revoked host ssh-ed25519 " + encoded + "\n");
    HVD_CHECK(again.size() == 1 && again[0] == key) << encoded;
  }
  return outcome;
}

}  // namespace hvd::fuzz
