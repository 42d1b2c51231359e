#ifndef HVD_BENCH_BYTE_SIZE_H_
#define HVD_BENCH_BYTE_SIZE_H_

#include <cstddef>
#include <optional>
#include <string>

namespace hvd::bench {

// "4096", "4K", "16M", "1G" (also "B", "KiB", "MiB", "GiB") -> bytes; nullopt when `text` is
// not a whole number with one of those units, or is 0. The benchmarks' size arguments.
std::optional<size_t> ParseByteSize(const std::string& text);

// CLI11 validator for ParseByteSize: "" when `text` parses, else what is wrong with it.
std::string ByteSizeError(const std::string& text);

}  // namespace hvd::bench

#endif  // HVD_BENCH_BYTE_SIZE_H_
