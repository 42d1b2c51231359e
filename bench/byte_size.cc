#include "byte_size.h"

#include <cctype>
#include <cstdlib>

namespace hvd::bench {

std::optional<size_t> ParseByteSize(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  char* end = nullptr;
  const unsigned long long value = std::strtoull(text.c_str(), &end, 10);
  const std::string unit(end);
  int shift = -1;
  if (unit.empty() || unit == "B") shift = 0;
  if (unit == "K" || unit == "KiB") shift = 10;
  if (unit == "M" || unit == "MiB") shift = 20;
  if (unit == "G" || unit == "GiB") shift = 30;
  if (shift < 0 || value == 0 || value > (~0ULL >> shift)) return std::nullopt;
  return static_cast<size_t>(value << shift);
}

std::string ByteSizeError(const std::string& text) {
  return ParseByteSize(text) ? "" : "'" + text + "' is not a size such as 4096, 64K, 16M or 1G";
}

}  // namespace hvd::bench
