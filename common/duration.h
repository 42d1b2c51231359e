// Durations of the options, which are given in seconds.
#ifndef HVD_COMMON_DURATION_H_
#define HVD_COMMON_DURATION_H_

#include <chrono>
#include <cstdint>

namespace hvd {

// `seconds` as whole milliseconds, truncated toward zero.
inline std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

}  // namespace hvd

#endif  // HVD_COMMON_DURATION_H_
