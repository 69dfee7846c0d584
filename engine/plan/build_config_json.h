// BuildConfig as JSON (how a plan records what it was built with). Every field is
// written; reading requires every field and throws nlohmann::json exceptions on a
// missing field or a wrong type (the caller names the file).
#pragma once
#include <nlohmann/json.hpp>

#include "engine/config/build_config.h"

namespace fb {

nlohmann::json build_config_to_json(const BuildConfig& c);
BuildConfig build_config_from_json(const nlohmann::json& j);

}  // namespace fb
