#include "harness/cases/plugin_settings.h"

#include <filesystem>

namespace fb {

namespace {

using json = nlohmann::json;

std::string show(const json& j) {
  std::string s = j.dump(-1, ' ', false, json::error_handler_t::replace);
  return s.size() > 60 ? s.substr(0, 57) + "..." : s;
}

std::vector<std::string> strings(const json& j, const std::string& field, const FieldError& fail) {
  std::vector<std::string> out;
  if (j.is_string()) return {j.get<std::string>()};
  if (!j.is_array() || j.empty()) fail(field, "expected a string or a non-empty list of strings, got " + show(j));
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string() || j[i].get<std::string>().empty())
      fail(field + "[" + std::to_string(i) + "]", "expected a non-empty string, got " + show(j[i]));
    out.push_back(j[i].get<std::string>());
  }
  return out;
}

Attribute attribute_from_json(const json& v, const std::string& field, const FieldError& fail) {
  if (v.is_number_integer()) return Attribute{v.get<int64_t>()};
  if (v.is_number()) return Attribute{v.get<float>()};
  if (v.is_string()) return Attribute{v.get<std::string>()};
  if (v.is_array() && !v.empty()) {
    bool ints = true, numbers = true, strs = true;
    for (const json& e : v) {
      ints = ints && e.is_number_integer();
      numbers = numbers && e.is_number();
      strs = strs && e.is_string();
    }
    if (ints) return Attribute{v.get<std::vector<int64_t>>()};
    if (numbers) return Attribute{v.get<std::vector<float>>()};
    if (strs) return Attribute{v.get<std::vector<std::string>>()};
  }
  fail(field, "expected a number, a string or a non-empty list of one of them, got " + show(v));
  return {};
}

json attribute_to_json(const Attribute& a) {
  return std::visit(
      [](const auto& v) -> json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, std::shared_ptr<const Graph>>) return nullptr;
        else return json(v);
      },
      a.value);
}

}  // namespace

PluginPlacement placement_from_json(const json& j, const std::string& field, const FieldError& fail) {
  if (!j.is_object()) fail(field, "expected an object, got " + show(j));
  for (const auto& [k, _] : j.items())
    if (k != "op" && k != "name" && k != "attrs" && k != "after" && k != "replace")
      fail(field + "." + k, "unknown field (known: op, name, attrs, after, replace)");
  PluginPlacement p;
  if (!j.contains("op") || !j["op"].is_string() || j["op"].get<std::string>().find('.') == std::string::npos)
    fail(field + ".op", "expected the plugin as \"domain.OpType\", e.g. \"fusebench.plugin.Copy\"");
  p.op = j["op"].get<std::string>();
  if (j.contains("name")) {
    if (!j["name"].is_string() || j["name"].get<std::string>().empty()) fail(field + ".name", "expected a non-empty string");
    p.name = j["name"].get<std::string>();
  }
  if (j.contains("attrs")) {
    if (!j["attrs"].is_object()) fail(field + ".attrs", "expected an object, got " + show(j["attrs"]));
    for (const auto& [k, v] : j["attrs"].items()) p.attrs[k] = attribute_from_json(v, field + ".attrs." + k, fail);
  }
  if (j.contains("after") == j.contains("replace"))
    fail(field, "give exactly one of 'after' (a tensor name) and 'replace' ({\"nodes\": globs, \"ops\": op types})");
  if (j.contains("after")) {
    if (!j["after"].is_string() || j["after"].get<std::string>().empty()) fail(field + ".after", "expected a tensor name");
    p.after = j["after"].get<std::string>();
  } else {
    const json& r = j["replace"];
    if (!r.is_object() || (!r.contains("nodes") && !r.contains("ops")))
      fail(field + ".replace", "expected {\"nodes\": [name globs]} and/or {\"ops\": [op types]}, got " + show(r));
    for (const auto& [k, _] : r.items())
      if (k != "nodes" && k != "ops") fail(field + ".replace." + k, "unknown field (known: nodes, ops)");
    if (r.contains("nodes")) p.replace_nodes = strings(r["nodes"], field + ".replace.nodes", fail);
    if (r.contains("ops")) p.replace_ops = strings(r["ops"], field + ".replace.ops", fail);
  }
  return p;
}

json placement_to_json(const PluginPlacement& p) {
  json j{{"op", p.op}};
  if (!p.name.empty()) j["name"] = p.name;
  if (!p.attrs.empty()) {
    json a = json::object();
    for (const auto& [k, v] : p.attrs) a[k] = attribute_to_json(v);
    j["attrs"] = a;
  }
  if (!p.after.empty()) j["after"] = p.after;
  if (!p.replace_nodes.empty() || !p.replace_ops.empty()) {
    json r = json::object();
    if (!p.replace_nodes.empty()) r["nodes"] = p.replace_nodes;
    if (!p.replace_ops.empty()) r["ops"] = p.replace_ops;
    j["replace"] = r;
  }
  return j;
}

json plugin_settings_to_json(const PluginSettings& s) {
  json insert = json::array();
  for (const PluginPlacement& p : s.placements) insert.push_back(placement_to_json(p));
  return json{{"libraries", s.libraries}, {"insert", insert}, {"cost", s.cost}};
}

PluginSettings plugin_settings_from_json(const json& j, const FieldError& fail) {
  PluginSettings s;
  if (!j.is_object()) fail("plugins", "expected an object, got " + show(j));
  if (j.contains("libraries") && !j["libraries"].empty()) s.libraries = strings(j["libraries"], "plugins.libraries", fail);
  if (j.contains("insert")) {
    if (!j["insert"].is_array()) fail("plugins.insert", "expected a list, got " + show(j["insert"]));
    for (size_t i = 0; i < j["insert"].size(); ++i)
      s.placements.push_back(placement_from_json(j["insert"][i], "plugins.insert[" + std::to_string(i) + "]", fail));
  }
  if (j.contains("cost")) {
    if (!j["cost"].is_boolean()) fail("plugins.cost", "expected true or false, got " + show(j["cost"]));
    s.cost = j["cost"].get<bool>();
  }
  return s;
}

json plugin_settings_key(const PluginSettings& s) {
  if (s.empty()) return nullptr;
  json libs = json::array();
  for (const std::string& l : s.libraries) libs.push_back(std::filesystem::path(l).filename().string());
  json insert = json::array();
  for (const PluginPlacement& p : s.placements) insert.push_back(placement_to_json(p));
  return json{{"libraries", libs}, {"insert", insert}};
}

std::string plugin_settings_label(const PluginSettings& s) {
  std::string out;
  for (const PluginPlacement& p : s.placements) {
    const std::string op = split_plugin_op(p.op).second;
    out += " +" + (p.name.empty() ? op : p.name);
  }
  return out;
}

bool PluginSettings::operator==(const PluginSettings& other) const {
  return plugin_settings_to_json(*this) == plugin_settings_to_json(other);
}

}  // namespace fb
