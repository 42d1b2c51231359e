#include "common/hmac.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hvd::control {
namespace {

std::string Hex(const MacTag& tag) {
  static const char* kDigits = "0123456789abcdef";
  std::string out;
  for (uint8_t b : tag) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

// RFC 4231 section 4 test cases 1, 2, 6 and 7 (HMAC-SHA-256 column).
TEST(HmacSha256, Rfc4231Case1) {
  std::vector<uint8_t> key(20, 0x0b);
  EXPECT_EQ(Hex(HmacSha256(key, {AsBytes("Hi There")})),
            "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
}

TEST(HmacSha256, Rfc4231Case2) {
  EXPECT_EQ(Hex(HmacSha256(AsBytes("Jefe"), {AsBytes("what do ya want for nothing?")})),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

TEST(HmacSha256, Rfc4231Case6KeyLongerThanBlock) {
  std::vector<uint8_t> key(131, 0xaa);
  EXPECT_EQ(
      Hex(HmacSha256(key, {AsBytes("Test Using Larger Than Block-Size Key - Hash Key First")})),
      "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

TEST(HmacSha256, Rfc4231Case7SplitIntoParts) {
  std::vector<uint8_t> key(131, 0xaa);
  // The message split at arbitrary points must give the same tag as in one piece.
  EXPECT_EQ(Hex(HmacSha256(
                key, {AsBytes("This is a test using a larger than block-size key "), AsBytes(""),
                      AsBytes("and a larger than block-size data. The key needs to be "
                              "hashed before being used by the HMAC algorithm.")})),
            "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
}

TEST(HmacSha256, EmptyKeyAndMessageAreAccepted) {
  EXPECT_EQ(Hex(HmacSha256({}, {})),
            "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad");
}

TEST(MacEquals, ComparesWholeTagsOnly) {
  MacTag a = HmacSha256(AsBytes("k"), {AsBytes("m")});
  MacTag b = a;
  EXPECT_TRUE(MacEquals(a, b));
  b[31] ^= 1;
  EXPECT_FALSE(MacEquals(a, b));
  EXPECT_FALSE(MacEquals(a, ByteSpan(a.data(), 31)));
  EXPECT_FALSE(MacEquals(a, {}));
}

}  // namespace
}  // namespace hvd::control
