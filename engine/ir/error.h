// The engine's one error type for bad input (a malformed model, an unsupported op, a
// shape that does not fit). Messages name the file, node and op type where known.
// Broken internal invariants use FB_CHECK, which names the source file and line.
#pragma once
#include <stdexcept>
#include <string>

namespace fb {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

[[noreturn]] void check_failed(const char* expr, const char* file, int line, const std::string& msg);

}  // namespace fb

#define FB_CHECK(cond, msg)                                                    \
  do {                                                                         \
    if (!(cond)) ::fb::check_failed(#cond, __FILE__, __LINE__, (msg));         \
  } while (0)
