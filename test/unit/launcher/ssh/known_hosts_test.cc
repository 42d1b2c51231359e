// RevokedKeys: the "@revoked" lines of a known_hosts file (the verdict on a live host is
// test/cluster's SshClusterTest.RevokedHostKeyIsRefusedUnderEveryPolicy).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "launcher/ssh/ssh_known_hosts.h"

namespace hvd::launcher {
namespace {

TEST(KnownHostsTest, RevokedLinesGiveTheirDecodedKeys) {
  // Given known_hosts text with revoked keys among plain, hashed, CA and malformed lines
  // ("AAAA" decodes to 3 zero bytes; "aGVsbG8=" to "hello"; "aGk=" to "hi")
  const std::string text =
      "hvd-h1 ssh-ed25519 AAAA\n"
      "@revoked hvd-h2 ssh-ed25519 aGVsbG8= old key\n"
      "@cert-authority *.example ssh-ed25519 AAAA\n"
      "@revoked\t*\tssh-rsa\taGk=\r\n"
      "@revoked hvd-h3 ssh-ed25519\n"          // no key
      "@revoked hvd-h3 ssh-ed25519 !!!!\n"     // not base64
      "@revoked hvd-h3 ssh-ed25519 aGVsbG8\n"  // not a multiple of 4
      "#@revoked hvd-h4 ssh-ed25519 aGk=\n"
      "  @revoked hvd-h5 ssh-ed25519 AAAA";  // leading blanks, no final newline
  // Then exactly the well-formed revoked keys come out, decoded
  const std::vector<std::string> want = {"hello", "hi", std::string(3, '\0')};
  EXPECT_EQ(RevokedKeys(text), want);
  EXPECT_TRUE(RevokedKeys("").empty());
  EXPECT_TRUE(RevokedKeys("\n\n@revoked\n").empty());
}

}  // namespace
}  // namespace hvd::launcher
