// Target "hmac": HMAC-SHA256 and the constant-time tag comparison (common/hmac.h) over keys,
// messages and presented tags of any length.
//
// Input: a key length byte, the key, then the message; the input's last 32 bytes (or fewer)
// are also presented as a tag. Invariants: the MAC of the message in two parts equals the MAC
// of the whole; a tag equals itself; a presented tag equals the MAC only when it is its bytes.
#include <cstring>

#include "common/check.h"
#include "common/hmac.h"
#include "test/fuzz/fuzz_input.h"
#include "test/fuzz/fuzz_target.h"

namespace hvd::fuzz {

std::string FuzzHmac(std::string_view input) {
  using control::AsBytes;
  FuzzInput in(input);
  const uint8_t key_length = in.Byte();
  std::string_view key = in.Take(key_length);
  std::string_view message = in.Rest();
  const size_t split = message.empty() ? 0 : static_cast<uint8_t>(message[0]) % message.size();

  control::MacTag whole = control::HmacSha256(AsBytes(key), {AsBytes(message)});
  control::MacTag parts = control::HmacSha256(
      AsBytes(key), {AsBytes(message.substr(0, split)), AsBytes(message.substr(split))});
  HVD_CHECK(whole == parts) << "HMAC of the message in two parts differs from the whole";
  HVD_CHECK(control::MacEquals(whole, {whole.data(), whole.size()}));

  std::string_view presented = input.substr(input.size() - std::min<size_t>(32, input.size()));
  const bool same = presented.size() == whole.size() &&
                    std::memcmp(presented.data(), whole.data(), whole.size()) == 0;
  HVD_CHECK_EQ(control::MacEquals(whole, AsBytes(presented)), same);
  return same ? "" : "presented tag differs\n";
}

}  // namespace hvd::fuzz
