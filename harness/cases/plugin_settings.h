// A case's plugins: the libraries to load and where to put plugins in the model (the
// scenario's "plugins", "insert_plugins" and "plugin_cost"; `--plugin` on the command
// line). One reader and one writer for the JSON form, shared by scenario files and stored
// case configs, so the two never drift apart.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/passes/plugin_placement.h"

namespace fb {

struct PluginSettings {
  std::vector<std::string> libraries{};     // absolute paths of plugin libraries
  std::vector<PluginPlacement> placements{};  // applied in order to the model
  // With placements: also build and time the model without them, and split the
  // difference (harness/measure/plugin_cost.h).
  bool cost = true;
  bool empty() const { return libraries.empty() && placements.empty(); }
  // Equal when they say the same in JSON (attributes have no operator== of their own).
  bool operator==(const PluginSettings& other) const;
};

// What a failure says: the field path and the message (the caller adds the file).
using FieldError = std::function<void(const std::string& field, const std::string& msg)>;

// One "insert_plugins" entry: {"op", "name"?, "attrs"?, "after" | "replace": {"nodes"?, "ops"?}}.
PluginPlacement placement_from_json(const nlohmann::json& j, const std::string& field, const FieldError& fail);
nlohmann::json placement_to_json(const PluginPlacement& p);

// The whole settings as stored with a case: {"libraries", "insert", "cost"}.
nlohmann::json plugin_settings_to_json(const PluginSettings& s);
PluginSettings plugin_settings_from_json(const nlohmann::json& j, const FieldError& fail);

// What of the settings goes into the case key: library file names (not paths, so a moved
// build keeps its history) and the placements; null when there are none.
nlohmann::json plugin_settings_key(const PluginSettings& s);

// "+Copy@T" style suffix for a case's label ("" without placements).
std::string plugin_settings_label(const PluginSettings& s);

}  // namespace fb
