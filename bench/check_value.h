// How the benchmarks' result checks print a value (hvd-bench, gloo-comm-bench): "5.0" for an
// integer, %.9g otherwise (nan, inf, fractions).
#ifndef HVD_BENCH_CHECK_VALUE_H_
#define HVD_BENCH_CHECK_VALUE_H_

#include <cmath>
#include <cstdio>
#include <string>

inline std::string CheckValueText(double v) {
  char text[64];
  if (std::fabs(v) < 1e15 && v == std::trunc(v)) {
    std::snprintf(text, sizeof(text), "%.1f", v);
  } else {
    std::snprintf(text, sizeof(text), "%.9g", v);
  }
  return text;
}

#endif  // HVD_BENCH_CHECK_VALUE_H_
