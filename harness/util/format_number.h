// Numbers in messages and tables, printf-style: one helper for the commands, the run loop,
// gate and compare.
#pragma once
#include <cmath>
#include <cstdio>
#include <initializer_list>
#include <string>

namespace fb {

// One number formatted by `format` ("%.2f", "speedup %.2fx"), which takes one double.
inline std::string format_number(const char* format, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// The fewest decimals, at least `fewest` and at most 6, at which each of `values` that is not
// equal to `threshold` prints differently from it: a speedup of 1.0971 against a minimum of
// 1.10 prints as 1.097, never as "1.10x vs min 1.10x".
inline int decimals_apart(std::initializer_list<double> values, double threshold, int fewest = 2) {
  int d = fewest;
  for (double v : values) {
    if (!std::isfinite(v) || v == threshold) continue;
    while (d < 6) {
      char a[64], b[64];
      std::snprintf(a, sizeof a, "%.*f", d, v);
      std::snprintf(b, sizeof b, "%.*f", d, threshold);
      if (std::string(a) != b) break;
      ++d;
    }
  }
  return d;
}

// A number with `decimals` decimals and a suffix: fixed(1.0971, 3, "x") -> "1.097x".
inline std::string fixed(double v, int decimals, const char* suffix = "") {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f%s", decimals, v, suffix);
  return buf;
}

// A relative change as a signed percentage: 0.05 -> "+5.0%".
inline std::string signed_percent(double v) { return format_number("%+.1f%%", 100 * v); }

}  // namespace fb
