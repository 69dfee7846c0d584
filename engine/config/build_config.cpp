#include "engine/config/build_config.h"

#include "engine/ir/error.h"

namespace fb {

FusionLevel parse_fusion_level(const std::string& s, const std::string& what) {
  if (s == "none") return FusionLevel::None;
  if (s == "mark-all") return FusionLevel::MarkAll;
  if (s == "standard") return FusionLevel::Standard;
  if (s == "aggressive") return FusionLevel::Aggressive;
  throw Error((what.empty() ? "" : what + ": ") + "unknown fusion level '" + s + "' (known: none, mark-all, standard, aggressive)");
}

const char* fusion_level_name(FusionLevel l) {
  switch (l) {
    case FusionLevel::None: return "none";
    case FusionLevel::MarkAll: return "mark-all";
    case FusionLevel::Standard: return "standard";
    case FusionLevel::Aggressive: return "aggressive";
  }
  return "?";
}

}  // namespace fb

namespace fb {

PrecisionMode parse_precision_mode(const std::string& s) {
  if (s == "prefer") return PrecisionMode::Prefer;
  if (s == "obey") return PrecisionMode::Obey;
  throw Error("unknown precision mode '" + s + "' (known: obey, prefer)");
}

const char* precision_mode_name(PrecisionMode m) { return m == PrecisionMode::Obey ? "obey" : "prefer"; }

LayerPrecision parse_layer_precision(const std::string& s) {
  const size_t eq = s.rfind('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw Error("--layer-precision: expected PATTERN=PRECISION (e.g. 'Softmax=fp32'), got '" + s + "'");
  return LayerPrecision{s.substr(0, eq), parse_precision(s.substr(eq + 1), "--layer-precision '" + s + "'")};
}

bool BuildConfig::asks_for_int8() const {
  if (precision == Precision::INT8) return true;
  for (const LayerPrecision& l : layer_precisions)
    if (l.precision == Precision::INT8) return true;
  return false;
}

}  // namespace fb
