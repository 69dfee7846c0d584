#include "engine/builder/build_config.h"

#include "engine/ir/error.h"

namespace fb {

FusionLevel parse_fusion_level(const std::string& s) {
  if (s == "none") return FusionLevel::None;
  if (s == "standard") return FusionLevel::Standard;
  throw Error("unknown fusion level '" + s + "' (known: none, standard)");
}

const char* fusion_level_name(FusionLevel l) {
  switch (l) {
    case FusionLevel::None: return "none";
    case FusionLevel::Standard: return "standard";
  }
  return "?";
}

}  // namespace fb
