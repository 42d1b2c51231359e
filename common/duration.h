// Durations of the options, which are given in seconds.
#ifndef HVD_COMMON_DURATION_H_
#define HVD_COMMON_DURATION_H_

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace hvd {

// `seconds` as whole milliseconds, truncated toward zero.
inline std::chrono::milliseconds Millis(double seconds) {
  return std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000.0));
}

// `seconds` as a message gives it: "%g s" ("1 s", "2.5 s", "0.001 s").
inline std::string SecondsText(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", seconds);
  return text;
}
template <typename Rep, typename Period>
std::string SecondsText(std::chrono::duration<Rep, Period> d) {
  return SecondsText(std::chrono::duration<double>(d).count());
}

}  // namespace hvd

#endif  // HVD_COMMON_DURATION_H_
