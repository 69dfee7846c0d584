#include "harness/load/load_settings.h"

namespace fb {

const std::vector<std::string>& load_scenarios() {
  static const std::vector<std::string> names{"single-stream", "multi-stream", "server", "offline"};
  return names;
}

double percentile_of(const LoadSettings& s) {
  if (s.percentile > 0) return s.percentile;
  return s.scenario == "single-stream" ? 0.90 : 0.99;
}

}  // namespace fb
