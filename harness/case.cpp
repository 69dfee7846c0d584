#include "harness/case.h"

#include "engine/ir/error.h"
#include "engine/util/sha256.h"
#include "harness/json_fields.h"

namespace fb {
namespace {

using json = nlohmann::json;
using namespace json_fields;

// A gate rule in JSON: present only when set, so a stored config says which rules apply.
void read_optional(const json& j, const char* key, const std::string& prefix, std::optional<double>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  double v = 0;
  read(j, key, prefix, v);
  out = v;
}

// Constraints as an ordered list of [pattern, precision] pairs: the first match wins, so
// the order is part of the meaning.
json precision_constraints_json(const PrecisionConstraints& pc) {
  json layers = json::array();
  for (const LayerPrecision& l : pc.layers) layers.push_back({l.pattern, l.precision});
  return {{"mode", pc.mode}, {"layers", layers}};
}

void read_precision_constraints(const json& j, PrecisionConstraints& out) {
  if (!j.is_object()) bad_field("precision_constraints", "an object", j);
  read(j, "mode", "precision_constraints.", out.mode);
  auto it = j.find("layers");
  if (it == j.end()) return;
  if (!it->is_array()) bad_field("precision_constraints.layers", "a list of [pattern, precision] pairs", *it);
  for (const json& e : *it) {
    if (!e.is_array() || e.size() != 2 || !e[0].is_string() || !e[1].is_string())
      bad_field("precision_constraints.layers", "a list of [pattern, precision] pairs", e);
    out.layers.push_back(LayerPrecision{e[0].get<std::string>(), e[1].get<std::string>()});
  }
}

}  // namespace

nlohmann::json CaseSpec::to_json() const {
  auto accuracy_json = [&] {
    json a{{"atol", accuracy.atol}, {"rtol", accuracy.rtol}, {"elementwise", accuracy.elementwise}};
    if (accuracy.min_cosine) a["min_cosine"] = *accuracy.min_cosine;
    return a;
  };
  json g = json::object();
  if (gate.min_speedup) g["min_speedup"] = *gate.min_speedup;
  if (gate.max_regression) g["max_regression"] = *gate.max_regression;
  if (gate.max_abs_err) g["max_abs_err"] = *gate.max_abs_err;
  json j{
      {"scenario", scenario},
      {"scenario_file", scenario_file},
      {"model", model},
      {"model_hash", model_hash},
      {"precision", precision},
      {"batch", batch},
      {"fusion", fusion},
      {"threads", threads},
      {"timing",
       {{"warmup_ms", timing.warmup_ms},
        {"warmup_iterations", timing.warmup_iterations},
        {"min_iterations", timing.min_iterations},
        {"max_iterations", timing.max_iterations},
        {"max_seconds", timing.max_seconds},
        {"target_rel_ci", timing.target_rel_ci},
        {"stop_rule", timing.stop_rule},
        {"pin_cpus", timing.pin_cpus},
        {"inject_delay_us", timing.inject_delay_us},
        {"processes", timing.processes},
        {"alternation", timing.alternation},
        {"block_iterations", timing.block_iterations}}},
      {"accuracy", accuracy_json()},
      {"gate", g},
      {"seed", seed},
      {"fusion_limits",
       {{"exclude_nodes", fusion_limits.exclude_nodes},
        {"exclude_ops", fusion_limits.exclude_ops},
        {"partition_points", fusion_limits.partition_points}}},
      {"precision_constraints", precision_constraints_json(precision_constraints)},
  };
  // Plugins only when there are any, so configs without them read as they always did.
  if (!plugins.empty() || !plugins.cost) j["plugins"] = plugin_settings_to_json(plugins);
  return j;
}

CaseSpec CaseSpec::from_json(const nlohmann::json& j) {
  try {
    return from_json_fields(j);
  } catch (const Error& e) {
    throw Error(std::string("case config: ") + e.what());
  }
}

CaseSpec CaseSpec::from_json_fields(const nlohmann::json& j) {
  if (!j.is_object()) bad_field("(case config)", "an object", j);
  CaseSpec s;
  read(j, "scenario", "", s.scenario);
  read(j, "scenario_file", "", s.scenario_file);
  read(j, "model", "", s.model);
  read(j, "model_hash", "", s.model_hash);
  read(j, "precision", "", s.precision);
  read_int(j, "batch", "", s.batch);
  read(j, "fusion", "", s.fusion);
  read_int(j, "threads", "", s.threads);
  read_int(j, "seed", "", s.seed);

  const json& t = object_at(j, "timing", "timing");
  read(t, "warmup_ms", "timing.", s.timing.warmup_ms);
  read_int(t, "warmup_iterations", "timing.", s.timing.warmup_iterations);
  read_int(t, "min_iterations", "timing.", s.timing.min_iterations);
  read_int(t, "max_iterations", "timing.", s.timing.max_iterations);
  read(t, "max_seconds", "timing.", s.timing.max_seconds);
  read(t, "target_rel_ci", "timing.", s.timing.target_rel_ci);
  read(t, "stop_rule", "timing.", s.timing.stop_rule);
  read(t, "inject_delay_us", "timing.", s.timing.inject_delay_us);
  read_int(t, "processes", "timing.", s.timing.processes);
  read(t, "alternation", "timing.", s.timing.alternation);
  read_int(t, "block_iterations", "timing.", s.timing.block_iterations);
  if (auto it = t.find("pin_cpus"); it != t.end()) {
    if (!it->is_array()) bad_field("timing.pin_cpus", "a list of CPU numbers", *it);
    for (size_t i = 0; i < it->size(); ++i) {
      const json& v = (*it)[i];
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 65535)
        bad_field("timing.pin_cpus[" + std::to_string(i) + "]", "a CPU number", v);
      s.timing.pin_cpus.push_back(static_cast<int>(v.get<int64_t>()));
    }
  }

  const json& a = object_at(j, "accuracy", "accuracy");
  read(a, "atol", "accuracy.", s.accuracy.atol);
  read(a, "rtol", "accuracy.", s.accuracy.rtol);
  if (auto it = a.find("elementwise"); it != a.end()) {
    if (!it->is_boolean()) bad_field("accuracy.elementwise", "true or false", *it);
    s.accuracy.elementwise = it->get<bool>();
  }
  read_optional(a, "min_cosine", "accuracy.", s.accuracy.min_cosine);
  if (auto it = j.find("precision_constraints"); it != j.end()) read_precision_constraints(*it, s.precision_constraints);

  const json& g = object_at(j, "gate", "gate");
  read_optional(g, "min_speedup", "gate.", s.gate.min_speedup);
  read_optional(g, "max_regression", "gate.", s.gate.max_regression);
  read_optional(g, "max_abs_err", "gate.", s.gate.max_abs_err);

  const json& f = object_at(j, "fusion_limits", "fusion_limits");
  read_strings(f, "exclude_nodes", "fusion_limits.", s.fusion_limits.exclude_nodes);
  read_strings(f, "exclude_ops", "fusion_limits.", s.fusion_limits.exclude_ops);
  read_strings(f, "partition_points", "fusion_limits.", s.fusion_limits.partition_points);
  if (auto it = j.find("plugins"); it != j.end())
    s.plugins = plugin_settings_from_json(*it, [](const std::string& field, const std::string& msg) {
      throw Error("case config: field '" + field + "': " + msg);
    });
  return s;
}

std::string CaseSpec::case_key() const {
  // nlohmann::json objects keep keys sorted and dump() without indentation is compact, so
  // this text is canonical: the same settings always give the same bytes.
  json config{{"precision", precision}, {"batch", batch}, {"fusion", fusion},
              {"threads", threads},     {"seed", seed}};
  // Fusion limits change the plan, so they are part of the key; absent when unset, so
  // the keys of cases without limits stay what they were.
  if (!fusion_limits.empty())
    config["fusion_limits"] = {{"exclude_nodes", fusion_limits.exclude_nodes},
                               {"exclude_ops", fusion_limits.exclude_ops},
                               {"partition_points", fusion_limits.partition_points}};
  // Likewise the precision constraints, absent when there are none.
  if (!precision_constraints.empty()) config["precision_constraints"] = precision_constraints_json(precision_constraints);
  // Plugins likewise: absent without them.
  if (!plugins.empty()) config["plugins"] = plugin_settings_key(plugins);
  std::string canonical =
      model_hash + "|" + config.dump(-1, ' ', false, json::error_handler_t::replace);
  return sha256_hex(canonical).substr(0, 16);
}

std::string CaseSpec::label() const {
  const std::string& name = scenario.empty() ? model : scenario;
  return name + " b=" + std::to_string(batch) + " " + precision + " " + fusion +
         " t=" + std::to_string(threads) + plugin_settings_label(plugins);
}

}  // namespace fb
