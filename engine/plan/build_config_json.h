// BuildConfig as JSON (how a plan records what it was built with). Every field is
// written; reading requires every field and throws nlohmann::json exceptions on a
// missing field or a wrong type (the caller names the file).
#pragma once
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/config/build_config.h"

namespace fb {

nlohmann::json build_config_to_json(const BuildConfig& c);
BuildConfig build_config_from_json(const nlohmann::json& j);

// The first setting, in the plan format's order, that a plan built with `built` fixes and
// `wanted` asks otherwise: its key and both values as a plan writes them (null: left out,
// the setting's default). Every setting but threads is fixed (a plan runs with any count).
struct PlanMismatch {
  std::string field;
  nlohmann::json wanted, built;
};
std::optional<PlanMismatch> plan_mismatch(const BuildConfig& wanted, const BuildConfig& built);

}  // namespace fb
