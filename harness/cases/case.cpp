#include "harness/cases/case.h"

#include "engine/ir/error.h"
#include "engine/util/sha256.h"
#include "harness/cases/case_fields.h"
#include "harness/util/json_fields.h"

namespace fb {
namespace {

using json = nlohmann::json;

// Puts `v` at a table path ("timing.warmup_ms") in `j`. A block is there even when all its
// values are left out ("gate": {}); a null value is left out unless `keep_null`.
void put(json& j, const std::string& path, json v, bool keep_null = false) {
  const size_t dot = path.find('.');
  json* at = &j;
  std::string key = path;
  if (dot != std::string::npos) {
    at = &j[path.substr(0, dot)];
    if (at->is_null()) *at = json::object();
    key = path.substr(dot + 1);
  }
  if (!v.is_null() || keep_null) (*at)[key] = std::move(v);
}

// The value at a table path in a stored config, or null when absent.
const OrderedJson* find(const OrderedJson& j, const std::string& path, const FieldReader& r) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) {
    auto it = j.find(path);
    return it == j.end() ? nullptr : &*it;
  }
  const std::string block = path.substr(0, dot);
  auto b = j.find(block);
  if (b == j.end()) return nullptr;
  if (!b->is_object()) r.error(block, "expected an object, got " + show(*b));
  auto it = b->find(path.substr(dot + 1));
  return it == b->end() ? nullptr : &*it;
}

}  // namespace

nlohmann::json CaseSpec::to_json() const {
  json j{{"scenario", scenario}, {"scenario_file", scenario_file}, {"model", model}, {"model_hash", model_hash}};
  for (const CaseField& f : case_fields()) put(j, f.path, f.write(*this));
  // Only int8 cases have calibration settings, only profiled cases a profile block, only
  // load cases load settings; other cases' configs stay as they were.
  for (const char* block : {"calibration", "profile", "load_settings"})
    if (j.contains(block) && j[block].empty()) j.erase(block);
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
  using namespace json_fields;
  if (!j.is_object()) bad_field("(case config)", "an object", j);
  CaseSpec s;
  read(j, "scenario", "", s.scenario);
  read(j, "scenario_file", "", s.scenario_file);
  read(j, "model", "", s.model);
  read(j, "model_hash", "", s.model_hash);
  // Every setting, checked as a scenario's is; missing ones keep their defaults, so older
  // stored configs still load.
  const FieldReader r{[](const std::string& field, const std::string& msg) {
                        throw Error("field '" + field + "': " + msg);
                      },
                      /*scenario=*/false};
  const OrderedJson doc(j);
  for (const CaseField& f : case_fields())
    if (const OrderedJson* v = find(doc, f.path, r)) f.read(*v, f.path, r, s);
  // A dynamic engine without its range would be built static under a dynamic label.
  if (s.dynamic() && s.dynamic_batch.empty()) r.fail("dynamic_batch", "missing: a case with engine_shapes 'dynamic' needs its range");
  return s;
}

namespace {

// The key settings (in_key) as canonical JSON text, without a curve's axis when `curve`.
// nlohmann::json objects keep keys sorted and dump() without indentation is compact, so
// this text is canonical: the same settings always give the same bytes.
std::string key_settings(const CaseSpec& s, bool curve) {
  json config = json::object();
  for (const CaseField& f : case_fields())
    if (f.in_key && f.in_key(s) && !(curve && f.curve_axis)) put(config, f.path, f.key_value ? f.key_value(s) : f.write(s), true);
  return config.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

std::string CaseSpec::key_json() const { return key_settings(*this, false); }

std::string CaseSpec::case_key() const { return sha256_hex(model_hash + "|" + key_json()).substr(0, 16); }

std::string CaseSpec::curve_key() const { return model_hash + "|" + model + "|" + key_settings(*this, true); }

std::string CaseSpec::label() const {
  const std::string& name = scenario.empty() ? model : scenario;
  return name + " b=" + std::to_string(batch) + " " + precision_name(precision) + " " + fusion_level_name(fusion) +
         " t=" + std::to_string(threads) + variant_label();
}

std::string CaseSpec::variant_label() const {
  return shapes_label() + (winograd ? "" : " no-winograd") + (cuda_graph ? " cuda-graph" : "") + (device == "cpu" ? "" : " " + device) +
         plugin_settings_label(plugins) + (load.is_default() ? "" : " " + load.scenario + " x" + std::to_string(load.instances));
}

std::string CaseSpec::shapes_label() const {
  if (!dynamic()) return "";
  return " dynamic[" + std::to_string(dynamic_batch.min) + ".." + std::to_string(dynamic_batch.max) + "]";
}

}  // namespace fb
