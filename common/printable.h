// Text from outside (a peer's reject, a remote login's output) shown in a message: printable
// ASCII as it is, every other byte as \xNN, at most `max` bytes of it.
#ifndef HVD_COMMON_PRINTABLE_H_
#define HVD_COMMON_PRINTABLE_H_

#include <string>
#include <string_view>

namespace hvd {

inline std::string Printable(std::string_view text, size_t max = 512) {
  std::string out;
  for (unsigned char c : text.substr(0, max)) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(static_cast<char>(c));
    } else {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 15]);
    }
  }
  return out;
}

}  // namespace hvd

#endif  // HVD_COMMON_PRINTABLE_H_
