#include "engine/ir/error.h"

namespace fb {

void check_failed(const char* expr, const char* file, int line, const std::string& msg) {
  throw std::logic_error(std::string("internal error at ") + file + ":" + std::to_string(line) +
                         ": check `" + expr + "` failed" + (msg.empty() ? "" : ": " + msg));
}

}  // namespace fb
