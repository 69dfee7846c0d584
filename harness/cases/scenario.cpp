#include "harness/cases/scenario.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "engine/util/closest_name.h"
#include "engine/zoo/zoo.h"
#include "harness/cases/accuracy.h"
#include "harness/cases/case_fields.h"

namespace fb {

namespace fs = std::filesystem;
// ordered_json keeps the document's order, so the first mistake reported is the first in the file.
using Json = nlohmann::ordered_json;

const std::vector<std::string>& supported_precisions() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (Precision p : known_precisions()) out.push_back(precision_name(p));
    return out;
  }();
  return names;
}

const std::vector<std::string>& supported_fusions() {
  static const std::vector<std::string> values{"none", "mark-all", "standard", "aggressive"};
  return values;
}

namespace {

// The top level of a scenario besides the case table's settings: the scenario's own fields
// and the plugins (harness/cases/plugin_settings.h).
const std::vector<std::string> kScenarioFields{"name", "description", "model", "matrix"};
const std::vector<std::string> kPluginFields{"plugins", "insert_plugins", "plugin_cost"};

std::string join(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

bool contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

// The block ("timing") and key ("warmup_ms") of a table path; the block is "" at the top.
std::pair<std::string, std::string> split_path(const std::string& path) {
  const size_t dot = path.find('.');
  if (dot == std::string::npos) return {"", path};
  return {path.substr(0, dot), path.substr(dot + 1)};
}

std::string child(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

// Turns a JSON document into a Scenario, one field at a time; every failure names the
// file (as given) and the field path.
class ScenarioReader {
 public:
  explicit ScenarioReader(std::string path)
      : path_(std::move(path)), where_(path_.empty() ? "<scenario text>" : path_) {}

  [[noreturn]] void fail(const std::string& msg) const { throw Error(where_ + ": " + msg); }
  [[noreturn]] void fail(const std::string& field, const std::string& msg) const {
    fail("field '" + field + "': " + msg);
  }

  Json parse(const std::string& text) const;
  Scenario read(const Json& doc) const;

 private:
  void check_known(const Json& obj, const std::string& prefix, const std::vector<std::string>& known) const;
  const Json& object(const Json& j, const std::string& field) const;
  std::string model(const Json& j) const;
  void matrix(const Json& doc, Scenario& s) const;
  void dynamic_batch(const Json& doc, Scenario& s) const;
  void load_settings(const Json& doc, const Scenario& s) const;
  void settings(const Json& doc, Scenario& s) const;
  void precision_accuracy(const Json& a, Scenario& s) const;
  std::string file_near_scenario(const std::string& given, const std::string& field, const char* what) const;
  PluginSettings plugins(const Json& doc) const;
  // One value of a matrix axis, read and checked by its row of the case table.
  Json axis_value(const CaseField& axis, const Json& v, const std::string& field) const;

  std::string path_;   // as given: used to resolve the model
  std::string where_;  // as messages name the file
  FieldReader reader_{[this](const std::string& field, const std::string& msg) { fail(field, msg); }, /*scenario=*/true};
};

// Frames of the document being parsed, so a repeated key can be named by its full path.
// (nlohmann would silently keep the last of two equal keys.)
class DuplicateKeyCheck {
 public:
  explicit DuplicateKeyCheck(const ScenarioReader& reader) : reader_(reader) {}

  bool operator()(int /*depth*/, Json::parse_event_t event, Json& parsed) {
    using E = Json::parse_event_t;
    switch (event) {
      case E::object_start: frames_.push_back(Frame{.object = true}); break;
      case E::array_start: frames_.push_back(Frame{.object = false}); break;
      case E::key: {
        Frame& top = frames_.back();
        top.key = parsed.get<std::string>();
        if (!top.keys.insert(top.key).second) reader_.fail("field '" + path() + "' is given twice");
        break;
      }
      case E::object_end:
      case E::array_end:
        frames_.pop_back();
        next_element();
        break;
      case E::value: next_element(); break;
    }
    return true;
  }

 private:
  struct Frame {
    bool object = true;
    std::string key = {};
    size_t index = 0;
    std::set<std::string> keys = {};
  };

  void next_element() {
    if (!frames_.empty() && !frames_.back().object) ++frames_.back().index;
  }

  std::string path() const {
    std::string out;
    for (const Frame& f : frames_) out = f.object ? child(out, f.key) : element(out, f.index);
    return out;
  }

  const ScenarioReader& reader_;
  std::vector<Frame> frames_;
};

Json ScenarioReader::parse(const std::string& text) const {
  try {
    return Json::parse(text, DuplicateKeyCheck(*this), /*allow_exceptions=*/true,
                       /*ignore_comments=*/true);
  } catch (const Json::exception& e) {
    // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 3,
    // column 7: ..."; the bracketed id means nothing to a user.
    std::string msg = e.what();
    if (!msg.empty() && msg[0] == '[') {
      size_t close = msg.find("] ");
      if (close != std::string::npos) msg = msg.substr(close + 2);
    }
    fail("invalid JSON: " + msg);
  }
}

void ScenarioReader::check_known(const Json& obj, const std::string& prefix,
                                 const std::vector<std::string>& known) const {
  for (const auto& [key, value] : obj.items()) {
    if (contains(known, key)) continue;
    fail("unknown field '" + child(prefix, key) + "' (known: " + join(known) + ")" + did_you_mean(key, known));
  }
}

const Json& ScenarioReader::object(const Json& j, const std::string& field) const {
  if (!j.is_object()) fail(field, "expected an object, got " + show(j));
  return j;
}

Json ScenarioReader::axis_value(const CaseField& axis, const Json& v, const std::string& field) const {
  CaseSpec c;
  axis.read(v, field, reader_, c);
  return v;
}

std::string ScenarioReader::model(const Json& j) const {
  std::string m = non_empty_string(j, "model", reader_);
  if (m.rfind("zoo:", 0) == 0) {
    if (m.size() == 4 || m[4] == '?') fail("model", "expected 'zoo:NAME[?param=value&...]', got " + show(j));
    // An unknown model or parameter is refused here, before a run or a database exists,
    // not per case after the run started.
    try {
      normalize_zoo_spec(m);
    } catch (const Error& e) {
      fail("model", e.what());
    }
    return m;
  }
  return file_near_scenario(m, "model", "ONNX file");
}

// A file named relative to the scenario file's folder: absolute, normalized, existing.
std::string ScenarioReader::file_near_scenario(const std::string& m, const std::string& field, const char* what) const {
  fs::path p(m);
  if (p.is_relative()) {
    fs::path base = path_.empty() ? fs::current_path() : fs::absolute(fs::path(path_)).parent_path();
    p = base / p;
  }
  p = p.lexically_normal();
  std::error_code ec;
  fs::file_status st = fs::status(p, ec);
  if (!fs::exists(st)) fail(field, std::string(what) + " not found: " + p.string());
  if (!fs::is_regular_file(st)) fail(field, "not a regular file: " + p.string());
  return p.string();
}

// The matrix: one case per combination of its axes' values, each axis a row of the case
// table; some may also be given once at the top level ("threads": 2).
void ScenarioReader::matrix(const Json& doc, Scenario& s) const {
  std::vector<std::string> names;  // in table order, as messages list them
  for (const CaseField& f : case_fields())
    if (f.matrix_nesting >= 0) names.push_back(f.path);
  const bool has_matrix = doc.contains("matrix");
  if (has_matrix) check_known(object(doc["matrix"], "matrix"), "matrix", names);
  auto in_matrix = [&](const std::string& path) { return has_matrix && doc["matrix"].contains(path); };
  std::map<std::string, std::vector<Json>> given;
  for (const std::string& path : names)
    if (in_matrix(path))
      given[path] = read_list<Json>(doc["matrix"][path], "matrix." + path, reader_,
                                    [&](const Json& v, const std::string& f, const FieldReader&) { return axis_value(case_field(path), v, f); });
  for (const CaseField& f : case_fields()) {
    if (f.in_scenario != InScenario::kInMatrixOrTop || !doc.contains(f.path)) continue;
    if (in_matrix(f.path)) fail(f.path, std::string("given both here and as 'matrix.") + f.path + "'; keep one");
    given[f.path] = {axis_value(f, doc[f.path], f.path)};
  }
  for (const CaseField* f : matrix_axes()) s.matrix.push_back(MatrixAxis{f, given[f->path]});
}

// What a load needs besides its own fields' checks: a server's rate and bound, a static
// engine, and a pool only where a load serves from one.
void ScenarioReader::load_settings(const Json& doc, const Scenario& s) const {
  const LoadSettings& l = s.settings.load;
  auto given = [&](const char* key) { return doc.contains("load_settings") && doc["load_settings"].contains(key); };
  std::vector<std::string> loads;
  for (const CaseSpec& c : s.axis("load")) loads.push_back(c.load.scenario);
  for (const std::string& load : loads) {
    if (load == "single-stream") continue;
    if (load == "server" && !given("latency_bound_ms"))
      fail("load_settings.latency_bound_ms", "a server load needs a latency bound (ms)");
    if (load == "server" && !given("target_qps") && !l.peak_search)
      fail("load_settings.target_qps", "a server load needs a target rate (queries per second), or \"peak_search\": true");
    for (const CaseSpec& c : s.axis("engine_shapes"))
      if (c.dynamic()) fail("load", "load '" + load + "' needs a static engine (matrix.engine_shapes)");
  }
  const bool only_single = std::all_of(loads.begin(), loads.end(), [](const std::string& v) { return v == "single-stream"; });
  if (only_single && (doc.contains("instances") || (doc.contains("matrix") && doc["matrix"].contains("instances"))))
    fail(doc.contains("instances") ? "instances" : "matrix.instances", "a pool serves a load other than single-stream (set \"load\")");
  if (only_single && doc.contains("load_settings"))
    fail("load_settings", "given, but every case is single-stream (set \"load\")");
}

// A dynamic engine's batch range: by default from 1 to the matrix's largest batch, built
// for the largest (TensorRT users' usual opt); every batch of the matrix must lie inside.
void ScenarioReader::dynamic_batch(const Json& doc, Scenario& s) const {
  const std::vector<CaseSpec> shapes = s.axis("engine_shapes");
  const bool any_dynamic = std::any_of(shapes.begin(), shapes.end(), [](const CaseSpec& c) { return c.dynamic(); });
  if (!any_dynamic) {
    if (doc.contains("dynamic_batch")) fail("dynamic_batch", "given, but no case has a dynamic engine (matrix.engine_shapes)");
    return;
  }
  std::vector<int64_t> batches;
  for (const CaseSpec& c : s.axis("batch")) batches.push_back(c.batch);
  const int64_t largest = *std::max_element(batches.begin(), batches.end());
  BatchRange& b = s.settings.dynamic_batch;
  if (b.empty()) b = BatchRange{1, largest, largest};
  for (int64_t batch : batches)
    if (batch < b.min || batch > b.max)
      fail("dynamic_batch", "matrix.batch " + std::to_string(batch) + " lies outside the range [" + std::to_string(b.min) + ", " +
                                std::to_string(b.max) + "] a dynamic engine is built for");
}

// Every other setting of the case table, at its path: the blocks ("timing": {...}) checked
// for unknown keys, then each value read by its row into the settings every case starts from.
void ScenarioReader::settings(const Json& doc, Scenario& s) const {
  std::vector<std::pair<std::string, std::vector<std::string>>> blocks;  // in table order
  for (const CaseField& f : case_fields()) {
    if (f.in_scenario != InScenario::kAtPath) continue;
    auto [block, key] = split_path(f.path);
    if (block.empty()) continue;
    if (blocks.empty() || blocks.back().first != block) blocks.push_back({block, {}});
    blocks.back().second.push_back(key);
  }
  for (auto& [block, keys] : blocks) {
    if (!doc.contains(block)) continue;
    std::vector<std::string> known = keys;
    if (block == "accuracy")  // and a block per precision other than fp32
      for (Precision p : known_precisions())
        if (p != Precision::FP32) known.push_back(precision_name(p));
    check_known(object(doc[block], block), block, known);
  }
  for (const CaseField& f : case_fields()) {
    if (f.in_scenario != InScenario::kAtPath) continue;
    auto [block, key] = split_path(f.path);
    if (block.empty() ? !doc.contains(key) : !doc.contains(block) || !doc[block].contains(key)) continue;
    f.read(block.empty() ? doc[key] : doc[block][key], f.path, reader_, s.settings);
  }

  const TimingConfig& t = s.settings.timing;
  if (t.min_iterations > t.max_iterations)
    fail(doc.contains("timing") && doc["timing"].contains("min_iterations") ? "timing.min_iterations"
                                                                            : "timing.max_iterations",
         "min_iterations (" + std::to_string(t.min_iterations) + ") is more than max_iterations (" +
             std::to_string(t.max_iterations) + ")");
  if (doc.contains("precision_constraints") && !doc["precision_constraints"].contains("layers"))
    fail("precision_constraints.layers", "is required (an object of PATTERN: PRECISION)");
  if (doc.contains("accuracy")) precision_accuracy(doc["accuracy"], s);
  if (doc.contains("accuracy") && (doc["accuracy"].contains("atol") || doc["accuracy"].contains("rtol") ||
                                   doc["accuracy"].contains("min_cosine")))
    s.precision_accuracy[Precision::FP32] = s.settings.accuracy;  // named: held on every device
  // Calibration files, like the model, are named relative to the scenario's folder.
  Int8Calibration& cal = s.settings.calibration;
  for (size_t i = 0; i < cal.data.size(); ++i)
    for (auto& [input, file] : cal.data[i])
      file = file_near_scenario(file, element("calibration.data", i) + "." + input, "calibration file");
  if (!cal.cache.empty() && fs::path(cal.cache).is_relative()) {
    const fs::path base = path_.empty() ? fs::current_path() : fs::absolute(fs::path(path_)).parent_path();
    cal.cache = (base / cal.cache).lexically_normal().string();
  }
}

// "accuracy": {"bf16": {atol, rtol, min_cosine}, ...}: a block per precision other than
// fp32, read by the same rows. In it, atol or rtol switches the elementwise check on (the
// other defaulting to 0) and min_cosine replaces the precision's default minimum.
void ScenarioReader::precision_accuracy(const Json& a, Scenario& s) const {
  std::vector<const CaseField*> rows;
  std::vector<std::string> keys;
  for (const CaseField& f : case_fields())
    if (f.in_scenario == InScenario::kAtPath && split_path(f.path).first == "accuracy")
      rows.push_back(&f), keys.push_back(split_path(f.path).second);
  for (Precision precision : known_precisions()) {
    const std::string p = precision_name(precision);
    if (precision == Precision::FP32 || !a.contains(p)) continue;
    const std::string field = "accuracy." + p;
    const Json& b = object(a[p], field);
    check_known(b, field, keys);
    CaseSpec c;
    c.accuracy = default_accuracy(precision);
    if (b.contains("atol") || b.contains("rtol")) c.accuracy = AccuracyConfig{.atol = 0, .rtol = 0, .elementwise = true,
                                                                              .min_cosine = c.accuracy.min_cosine};
    for (size_t i = 0; i < rows.size(); ++i)
      if (b.contains(keys[i])) rows[i]->read(b[keys[i]], field + "." + keys[i], reader_, c);
    s.precision_accuracy[precision] = c.accuracy;
  }
}

PluginSettings ScenarioReader::plugins(const Json& doc) const {
  PluginSettings ps;
  if (doc.contains("plugins"))
    ps.libraries = read_list<std::string>(doc["plugins"], "plugins", reader_,
                                          [&](const Json& v, const std::string& f, const FieldReader& r) {
                                            return file_near_scenario(non_empty_string(v, f, r), f, "plugin library");
                                          });
  if (doc.contains("insert_plugins")) {
    const Json& ins = doc["insert_plugins"];
    if (!ins.is_array() || ins.empty()) fail("insert_plugins", "expected a non-empty list, got " + show(ins));
    const FieldError field_error = [&](const std::string& f, const std::string& msg) { fail(f, msg); };
    for (size_t i = 0; i < ins.size(); ++i)
      ps.placements.push_back(placement_from_json(nlohmann::json::parse(ins[i].dump()), element("insert_plugins", i), field_error));
  }
  if (doc.contains("plugin_cost")) {
    if (!doc["plugin_cost"].is_boolean()) fail("plugin_cost", "expected true or false, got " + show(doc["plugin_cost"]));
    ps.cost = doc["plugin_cost"].get<bool>();
  }
  return ps;
}

Scenario ScenarioReader::read(const Json& doc) const {
  if (!doc.is_object()) fail("expected a JSON object at the top level, got " + show(doc));
  std::vector<std::string> known = kScenarioFields;
  for (const CaseField& f : case_fields())
    if (f.in_scenario == InScenario::kInMatrixOrTop) known.push_back(f.path);
  for (const CaseField& f : case_fields()) {
    const std::string top = split_path(f.path).first.empty() ? f.path : split_path(f.path).first;
    if (f.in_scenario == InScenario::kAtPath && !contains(known, top)) known.push_back(top);
  }
  known.insert(known.end(), kPluginFields.begin(), kPluginFields.end());
  check_known(doc, "", known);

  Scenario s;
  if (!path_.empty()) {
    s.file = fs::absolute(fs::path(path_)).lexically_normal().string();
    s.name = fs::path(path_).stem().string();
  }
  if (doc.contains("name")) s.name = non_empty_string(doc["name"], "name", reader_);
  if (s.name.empty()) s.name = "scenario";
  if (doc.contains("description")) {
    if (!doc["description"].is_string()) fail("description", "expected a string, got " + show(doc["description"]));
    s.description = doc["description"].get<std::string>();
  }

  if (!doc.contains("model")) fail("field 'model' is required");
  s.model = model(doc["model"]);
  matrix(doc, s);
  settings(doc, s);
  dynamic_batch(doc, s);
  load_settings(doc, s);
  s.settings.plugins = plugins(doc);
  return s;
}

}  // namespace

Scenario parse_scenario(const std::string& text, const std::string& path) {
  ScenarioReader reader(path);
  return reader.read(reader.parse(text));
}

Scenario load_scenario(const std::string& path) {
  ScenarioReader reader(path);
  std::error_code ec;
  fs::file_status st = fs::status(path, ec);
  if (!fs::exists(st)) reader.fail("scenario file not found");
  if (fs::is_directory(st)) reader.fail("is a directory, not a scenario file");
  std::ifstream in(path, std::ios::binary);
  if (!in) reader.fail("cannot open the scenario file");
  std::ostringstream text;
  if (in.peek() != std::ifstream::traits_type::eof()) text << in.rdbuf();
  if (in.bad()) reader.fail("cannot read the scenario file");
  return reader.read(reader.parse(text.str()));
}

namespace {

// Sets a value the scenario reader already checked.
void set_axis(const MatrixAxis& a, const OrderedJson& v, CaseSpec& c) {
  const FieldReader checked{[](const std::string& field, const std::string& msg) { throw Error("field '" + field + "': " + msg); },
                            /*scenario=*/true};
  a.field->read(v, a.field->path, checked, c);
}

// Every case the axes from `axis` inward make of `c`.
void expand_from(const Scenario& s, size_t axis, const CaseSpec& c, std::vector<CaseSpec>& cases) {
  if (axis == s.matrix.size()) {
    cases.push_back(c);
    return;
  }
  const MatrixAxis& a = s.matrix[axis];
  if (a.values.empty() || (a.field->axis_applies && !a.field->axis_applies(c))) return expand_from(s, axis + 1, c, cases);
  for (const OrderedJson& v : a.values) {
    CaseSpec next = c;
    set_axis(a, v, next);
    expand_from(s, axis + 1, next, cases);
  }
}

}  // namespace

std::vector<CaseSpec> Scenario::axis(const std::string& path) const {
  for (const MatrixAxis& a : matrix) {
    if (a.field->path != path || a.values.empty()) continue;
    std::vector<CaseSpec> out;
    for (const OrderedJson& v : a.values) set_axis(a, v, out.emplace_back(settings));
    return out;
  }
  case_field(path);  // an unknown path is an error, not one default case
  return {settings};
}

std::vector<CaseSpec> expand_cases(const Scenario& s) {
  std::vector<CaseSpec> cases;
  expand_from(s, 0, s.settings, cases);
  for (CaseSpec& c : cases) {
    if (!c.dynamic()) c.dynamic_batch = {};
    c.scenario = s.name;
    c.scenario_file = s.file;
    c.model = s.model;
    auto own = s.precision_accuracy.find(c.precision);
    c.accuracy = own != s.precision_accuracy.end() ? own->second : default_accuracy(c.precision, c.device);
  }
  return cases;
}

}  // namespace fb
