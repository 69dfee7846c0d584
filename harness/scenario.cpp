#include "harness/scenario.h"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "harness/accuracy.h"

namespace fb {

namespace fs = std::filesystem;
// ordered_json keeps the document's order, so the first mistake reported is the first in the file.
using Json = nlohmann::ordered_json;

const std::vector<std::string>& supported_precisions() { return known_precisions(); }

const std::vector<std::string>& supported_fusions() {
  static const std::vector<std::string> values{"none", "mark-all", "standard", "aggressive"};
  return values;
}

namespace {

constexpr int64_t kMaxBatch = 65536;
constexpr int64_t kMaxThreads = 1024;

const std::vector<std::string> kTopLevelFields{"name",     "model", "matrix", "threads", "timing",
                                               "accuracy", "gate",  "seed",   "description", "fusion_limits",
                                               "precision_constraints", "plugins", "insert_plugins",
                                               "plugin_cost"};
const std::vector<std::string> kFusionLimitFields{"exclude_nodes", "exclude_ops", "partition_points"};
const std::vector<std::string> kMatrixFields{"precision", "batch", "fusion", "threads"};
const std::vector<std::string> kTimingFields{"warmup_ms",      "warmup_iterations", "min_iterations",
                                             "max_iterations", "max_seconds",       "target_rel_ci",
                                             "stop_rule",      "pin_cpus",          "inject_delay_us",
                                             "processes",      "alternation",       "block_iterations"};
const std::vector<std::string> kToleranceFields{"atol", "rtol", "min_cosine"};
const std::vector<std::string> kPrecisionConstraintFields{"mode", "layers"};
const std::vector<std::string> kGateFields{"min_speedup", "max_regression", "max_abs_err"};

std::string join(const std::vector<std::string>& values) {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : ", ") + v;
  return out;
}

bool contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

// A JSON value as a message shows it: short, so a stray object does not flood the line.
std::string show(const Json& j) {
  std::string s = j.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string child(const std::string& prefix, const std::string& key) {
  return prefix.empty() ? key : prefix + "." + key;
}

std::string element(const std::string& field, size_t i) {
  return field + "[" + std::to_string(i) + "]";
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
  std::string string(const Json& j, const std::string& field) const;
  int64_t integer(const Json& j, const std::string& field, int64_t lo, int64_t hi) const;
  double positive(const Json& j, const std::string& field) const;
  double non_negative(const Json& j, const std::string& field) const;
  std::string model(const Json& j) const;
  void accuracy(const Json& j, Scenario& s) const;
  PrecisionConstraints precision_constraints(const Json& j) const;
  std::string file_near_scenario(const std::string& given, const std::string& field, const char* what) const;
  PluginSettings plugins(const Json& doc) const;

  template <class T, class ReadOne>
  std::vector<T> list(const Json& j, const std::string& field, ReadOne read_one) const;

  std::string path_;   // as given: used to resolve the model
  std::string where_;  // as messages name the file
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
    std::string msg = "unknown field '" + child(prefix, key) + "' (known: " + join(known) + ")";
    std::string best;
    size_t best_distance = 3;  // suggest only close misspellings
    for (const auto& k : known) {
      size_t d = edit_distance(key, k);
      if (d < best_distance) best_distance = d, best = k;
    }
    if (!best.empty()) msg += "; did you mean '" + best + "'?";
    fail(msg);
  }
}

const Json& ScenarioReader::object(const Json& j, const std::string& field) const {
  if (!j.is_object()) fail(field, "expected an object, got " + show(j));
  return j;
}

std::string ScenarioReader::string(const Json& j, const std::string& field) const {
  if (!j.is_string()) fail(field, "expected a string, got " + show(j));
  std::string s = j.get<std::string>();
  if (s.empty()) fail(field, "must not be empty");
  return s;
}

int64_t ScenarioReader::integer(const Json& j, const std::string& field, int64_t lo, int64_t hi) const {
  const std::string expected = lo == 1 ? "a positive integer" : "an integer >= " + std::to_string(lo);
  if (!j.is_number_integer()) fail(field, "expected " + expected + ", got " + show(j));
  // nlohmann stores every non-negative integer as unsigned; one above INT64_MAX is only too large.
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(hi))
    fail(field, "must be at most " + std::to_string(hi) + ", got " + show(j));
  int64_t v = j.get<int64_t>();
  if (v < lo) fail(field, "expected " + expected + ", got " + show(j));
  if (v > hi) fail(field, "must be at most " + std::to_string(hi) + ", got " + show(j));
  return v;
}

double ScenarioReader::positive(const Json& j, const std::string& field) const {
  if (!j.is_number() || !(j.get<double>() > 0) || !std::isfinite(j.get<double>()))
    fail(field, "expected a positive number, got " + show(j));
  return j.get<double>();
}

double ScenarioReader::non_negative(const Json& j, const std::string& field) const {
  if (!j.is_number() || !(j.get<double>() >= 0) || !std::isfinite(j.get<double>()))
    fail(field, "expected a number >= 0, got " + show(j));
  return j.get<double>();
}

template <class T, class ReadOne>
std::vector<T> ScenarioReader::list(const Json& j, const std::string& field, ReadOne read_one) const {
  if (!j.is_array()) fail(field, "expected a list, got " + show(j));
  if (j.empty()) fail(field, "must not be empty (leave the field out for the default)");
  std::vector<T> out;
  for (size_t i = 0; i < j.size(); ++i) {
    T v = read_one(j[i], element(field, i));
    auto earlier = std::find(out.begin(), out.end(), v);
    if (earlier != out.end())
      fail(element(field, i), "duplicate value " + show(j[i]) + " (also at " +
                                  element(field, static_cast<size_t>(earlier - out.begin())) + ")");
    out.push_back(v);
  }
  return out;
}

std::string ScenarioReader::model(const Json& j) const {
  std::string m = string(j, "model");
  if (m.rfind("zoo:", 0) == 0) {
    if (m.size() == 4 || m[4] == '?') fail("model", "expected 'zoo:NAME[?param=value&...]', got " + show(j));
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

// "accuracy": {atol, rtol, min_cosine} for fp32 cases, and a block per other precision.
// In a precision's block, atol or rtol switches the elementwise check on (the other
// defaulting to 0) and min_cosine replaces the default minimum.
void ScenarioReader::accuracy(const Json& j, Scenario& s) const {
  const Json& a = object(j, "accuracy");
  std::vector<std::string> known = kToleranceFields;
  for (const std::string& p : known_precisions())
    if (p != "fp32") known.push_back(p);
  check_known(a, "accuracy", known);
  auto cosine = [&](const Json& v, const std::string& f) {
    if (!v.is_number() || !(v.get<double>() >= -1 && v.get<double>() <= 1))
      fail(f, "expected a number between -1 and 1, got " + show(v));
    return v.get<double>();
  };
  if (a.contains("atol")) s.accuracy.atol = non_negative(a["atol"], "accuracy.atol");
  if (a.contains("rtol")) s.accuracy.rtol = non_negative(a["rtol"], "accuracy.rtol");
  if (a.contains("min_cosine")) s.accuracy.min_cosine = cosine(a["min_cosine"], "accuracy.min_cosine");
  for (const std::string& p : known_precisions()) {
    if (p == "fp32" || !a.contains(p)) continue;
    const std::string field = "accuracy." + p;
    const Json& b = object(a[p], field);
    check_known(b, field, kToleranceFields);
    AccuracyConfig c = default_accuracy(p);
    if (b.contains("atol") || b.contains("rtol")) {
      c.elementwise = true;
      c.atol = b.contains("atol") ? non_negative(b["atol"], field + ".atol") : 0;
      c.rtol = b.contains("rtol") ? non_negative(b["rtol"], field + ".rtol") : 0;
    }
    if (b.contains("min_cosine")) c.min_cosine = cosine(b["min_cosine"], field + ".min_cosine");
    s.precision_accuracy[p] = c;
  }
}

// "precision_constraints": {"mode": "obey" | "prefer", "layers": {PATTERN: PRECISION, ...}};
// the layers' order is kept (the first matching pattern decides a node's precision).
PrecisionConstraints ScenarioReader::precision_constraints(const Json& j) const {
  const Json& o = object(j, "precision_constraints");
  check_known(o, "precision_constraints", kPrecisionConstraintFields);
  PrecisionConstraints pc;
  if (o.contains("mode")) {
    pc.mode = string(o["mode"], "precision_constraints.mode");
    if (pc.mode != "obey" && pc.mode != "prefer")
      fail("precision_constraints.mode", "expected \"obey\" or \"prefer\", got " + show(o["mode"]));
  }
  if (!o.contains("layers")) fail("precision_constraints.layers", "is required (an object of PATTERN: PRECISION)");
  const Json& layers = object(o["layers"], "precision_constraints.layers");
  if (layers.empty()) fail("precision_constraints.layers", "must not be empty");
  for (const auto& [pattern, value] : layers.items()) {
    const std::string field = "precision_constraints.layers." + pattern;
    if (pattern.empty()) fail("precision_constraints.layers", "a pattern must not be empty");
    std::string p = string(value, field);
    if (!contains(known_precisions(), p))
      fail(field, "unknown precision '" + p + "' (known: " + join(known_precisions()) + ")");
    pc.layers.push_back(LayerPrecision{pattern, p});
  }
  return pc;
}

PluginSettings ScenarioReader::plugins(const Json& doc) const {
  PluginSettings ps;
  if (doc.contains("plugins"))
    ps.libraries = list<std::string>(doc["plugins"], "plugins", [&](const Json& v, const std::string& f) {
      return file_near_scenario(string(v, f), f, "plugin library");
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
  check_known(doc, "", kTopLevelFields);

  Scenario s;
  if (!path_.empty()) {
    s.file = fs::absolute(fs::path(path_)).lexically_normal().string();
    s.name = fs::path(path_).stem().string();
  }
  if (doc.contains("name")) s.name = string(doc["name"], "name");
  if (s.name.empty()) s.name = "scenario";
  if (doc.contains("description")) {
    if (!doc["description"].is_string()) fail("description", "expected a string, got " + show(doc["description"]));
    s.description = doc["description"].get<std::string>();
  }

  if (!doc.contains("model")) fail("field 'model' is required");
  s.model = model(doc["model"]);

  if (doc.contains("matrix")) {
    const Json& m = object(doc["matrix"], "matrix");
    check_known(m, "matrix", kMatrixFields);
    if (m.contains("precision")) {
      s.precisions = list<std::string>(m["precision"], "matrix.precision", [&](const Json& v, const std::string& f) {
        if (!v.is_string()) fail(f, "expected a string, got " + show(v));
        std::string p = v.get<std::string>();
        if (!contains(supported_precisions(), p))
          fail(f, "precision '" + p + "' is not supported (supported: " + join(supported_precisions()) + ")");
        return p;
      });
    }
    if (m.contains("batch")) {
      s.batches = list<int64_t>(m["batch"], "matrix.batch",
                                [&](const Json& v, const std::string& f) { return integer(v, f, 1, kMaxBatch); });
    }
    if (m.contains("fusion")) {
      s.fusions = list<std::string>(m["fusion"], "matrix.fusion", [&](const Json& v, const std::string& f) {
        if (!v.is_string()) fail(f, "expected a string, got " + show(v));
        std::string fu = v.get<std::string>();
        if (!contains(supported_fusions(), fu))
          fail(f, "fusion '" + fu + "' is not supported (allowed: " + join(supported_fusions()) + ")");
        return fu;
      });
    }
    if (m.contains("threads")) {
      s.threads = list<int>(m["threads"], "matrix.threads", [&](const Json& v, const std::string& f) {
        return static_cast<int>(integer(v, f, 1, kMaxThreads));
      });
    }
  }
  if (doc.contains("threads")) {
    if (doc.contains("matrix") && doc["matrix"].contains("threads"))
      fail("threads", "given both here and as 'matrix.threads'; keep one");
    s.threads = {static_cast<int>(integer(doc["threads"], "threads", 1, kMaxThreads))};
  }

  if (doc.contains("timing")) {
    const Json& t = object(doc["timing"], "timing");
    check_known(t, "timing", kTimingFields);
    TimingConfig& c = s.timing;
    if (t.contains("warmup_ms")) c.warmup_ms = positive(t["warmup_ms"], "timing.warmup_ms");
    if (t.contains("warmup_iterations"))
      c.warmup_iterations = static_cast<int>(integer(t["warmup_iterations"], "timing.warmup_iterations", 1, INT_MAX));
    if (t.contains("min_iterations"))
      c.min_iterations = static_cast<int>(integer(t["min_iterations"], "timing.min_iterations", 1, INT_MAX));
    if (t.contains("max_iterations"))
      c.max_iterations = static_cast<int>(integer(t["max_iterations"], "timing.max_iterations", 1, INT_MAX));
    if (t.contains("max_seconds")) c.max_seconds = positive(t["max_seconds"], "timing.max_seconds");
    if (t.contains("target_rel_ci")) {
      const Json& v = t["target_rel_ci"];
      if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() < 1))
        fail("timing.target_rel_ci", "expected a number between 0 and 1 (exclusive), got " + show(v));
      c.target_rel_ci = v.get<double>();
    }
    if (t.contains("stop_rule")) {
      c.stop_rule = string(t["stop_rule"], "timing.stop_rule");
      if (c.stop_rule != "median-ci" && c.stop_rule != "speedup-ci")
        fail("timing.stop_rule", "expected \"median-ci\" or \"speedup-ci\", got " + show(t["stop_rule"]));
    }
    if (t.contains("pin_cpus")) {
      c.pin_cpus = list<int>(t["pin_cpus"], "timing.pin_cpus", [&](const Json& v, const std::string& f) {
        return static_cast<int>(integer(v, f, 0, CPU_SETSIZE - 1));
      });
    }
    if (t.contains("inject_delay_us")) c.inject_delay_us = non_negative(t["inject_delay_us"], "timing.inject_delay_us");
    if (t.contains("processes")) c.processes = static_cast<int>(integer(t["processes"], "timing.processes", 1, 64));
    if (t.contains("alternation")) {
      c.alternation = string(t["alternation"], "timing.alternation");
      if (c.alternation != "iteration" && c.alternation != "block")
        fail("timing.alternation", "expected \"iteration\" or \"block\", got " + show(t["alternation"]));
    }
    if (t.contains("block_iterations"))
      c.block_iterations = static_cast<int>(integer(t["block_iterations"], "timing.block_iterations", 1, 100000));
    if (c.min_iterations > c.max_iterations)
      fail(t.contains("min_iterations") ? "timing.min_iterations" : "timing.max_iterations",
           "min_iterations (" + std::to_string(c.min_iterations) + ") is more than max_iterations (" +
               std::to_string(c.max_iterations) + ")");
  }

  if (doc.contains("accuracy")) accuracy(doc["accuracy"], s);
  if (doc.contains("precision_constraints")) s.precision_constraints = precision_constraints(doc["precision_constraints"]);

  if (doc.contains("gate")) {
    const Json& g = object(doc["gate"], "gate");
    check_known(g, "gate", kGateFields);
    if (g.contains("min_speedup")) s.gate_min_speedup = positive(g["min_speedup"], "gate.min_speedup");
    if (g.contains("max_regression")) s.gate_max_regression = non_negative(g["max_regression"], "gate.max_regression");
    if (g.contains("max_abs_err")) s.gate_max_abs_err = non_negative(g["max_abs_err"], "gate.max_abs_err");
  }

  if (doc.contains("fusion_limits")) {
    const Json& fl = object(doc["fusion_limits"], "fusion_limits");
    check_known(fl, "fusion_limits", kFusionLimitFields);
    auto names = [&](const char* key, std::vector<std::string>& out) {
      if (!fl.contains(key)) return;
      const std::string field = std::string("fusion_limits.") + key;
      out = list<std::string>(fl[key], field, [&](const Json& v, const std::string& f) {
        std::string n = string(v, f);
        if (n.empty()) fail(f, "expected a non-empty name");
        return n;
      });
    };
    names("exclude_nodes", s.fusion_limits.exclude_nodes);
    names("exclude_ops", s.fusion_limits.exclude_ops);
    names("partition_points", s.fusion_limits.partition_points);
  }

  s.plugins = plugins(doc);

  if (doc.contains("seed")) {
    const Json& v = doc["seed"];
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
      fail("seed", "expected an integer >= 0, got " + show(v));
    s.seed = v.get<uint64_t>();
  }
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

std::vector<CaseSpec> expand_cases(const Scenario& s) {
  std::vector<CaseSpec> cases;
  cases.reserve(s.precisions.size() * s.batches.size() * s.fusions.size() * s.threads.size());
  for (const auto& precision : s.precisions)
    for (int64_t batch : s.batches)
      for (const auto& fusion : s.fusions)
        for (int threads : s.threads) {
          CaseSpec c;
          c.scenario = s.name;
          c.scenario_file = s.file;
          c.model = s.model;
          c.precision = precision;
          c.batch = batch;
          c.fusion = fusion;
          c.threads = threads;
          c.timing = s.timing;
          auto own = s.precision_accuracy.find(precision);
          c.accuracy = precision == "fp32"                    ? s.accuracy
                       : own != s.precision_accuracy.end() ? own->second
                                                           : default_accuracy(precision);
          c.precision_constraints = s.precision_constraints;
          c.gate = GateConfig{s.gate_min_speedup, s.gate_max_regression, s.gate_max_abs_err};
          c.seed = s.seed;
          c.fusion_limits = s.fusion_limits;
          c.plugins = s.plugins;
          cases.push_back(std::move(c));
        }
  return cases;
}

}  // namespace fb
