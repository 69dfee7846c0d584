#include "engine/builder/build_config.h"

#include "engine/ir/error.h"

namespace fb {

FusionLevel parse_fusion_level(const std::string& s) {
  if (s == "none") return FusionLevel::None;
  if (s == "mark-all") return FusionLevel::MarkAll;
  if (s == "standard") return FusionLevel::Standard;
  if (s == "aggressive") return FusionLevel::Aggressive;
  throw Error("unknown fusion level '" + s + "' (known: none, mark-all, standard, aggressive)");
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
