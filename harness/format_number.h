// Numbers in messages and tables, printf-style: one helper for the commands, the run loop,
// gate and compare.
#pragma once
#include <cstdio>
#include <string>

namespace fb {

// One number formatted by `format` ("%.2f", "speedup %.2fx"), which takes one double.
inline std::string format_number(const char* format, double v) {
  char buf[96];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

// A relative change as a signed percentage: 0.05 -> "+5.0%".
inline std::string signed_percent(double v) { return format_number("%+.1f%%", 100 * v); }

}  // namespace fb
