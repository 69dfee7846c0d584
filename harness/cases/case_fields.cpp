#include "harness/cases/case_fields.h"

#include <sched.h>

#include <algorithm>
#include <climits>
#include <cmath>

#include <cxxopts.hpp>

#include "engine/backend/backend.h"
#include "engine/ir/error.h"
#include "harness/cases/scenario.h"

namespace fb {

void FieldReader::error(const std::string& field, const std::string& msg) const {
  fail(field, msg);
  throw Error("field '" + field + "': " + msg);  // fail always throws; this keeps the promise
}

std::string show(const OrderedJson& j) {
  std::string s = j.dump(-1, ' ', false, OrderedJson::error_handler_t::replace);
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

std::string element(const std::string& field, size_t i) { return field + "[" + std::to_string(i) + "]"; }

std::string non_empty_string(const OrderedJson& j, const std::string& field, const FieldReader& r) {
  if (!j.is_string()) r.error(field, "expected a string, got " + show(j));
  std::string s = j.get<std::string>();
  if (s.empty()) r.error(field, "must not be empty");
  return s;
}

Tensor shape_input_tensor(const nlohmann::json& value, const std::string& field) {
  constexpr size_t kMaxValues = 64;  // shape inputs are small: a shape, starts, a K
  const bool list = value.is_array();
  const nlohmann::json values = list ? value : nlohmann::json::array({value});
  if (values.empty() || values.size() > kMaxValues)
    throw Error("field '" + field + "': expected a number or a list of 1 to 64 numbers, got " + value.dump());
  bool integers = true;
  for (const nlohmann::json& v : values) {
    if (!v.is_number()) throw Error("field '" + field + "': expected numbers, got " + value.dump());
    integers = integers && v.is_number_integer();
  }
  const Shape shape = list ? Shape{int64_t(values.size())} : Shape{};
  Tensor t(integers ? DType::Int64 : DType::Float32, shape);
  for (size_t i = 0; i < values.size(); ++i) {
    if (integers) t.data<int64_t>()[i] = values[i].get<int64_t>();
    else t.data<float>()[i] = values[i].get<float>();
  }
  return t;
}

namespace {

using Json = OrderedJson;

std::string join(const std::vector<std::string>& values, const char* sep = ", ") {
  std::string out;
  for (const auto& v : values) out += (out.empty() ? "" : sep) + v;
  return out;
}

bool contains(const std::vector<std::string>& values, const std::string& v) {
  return std::find(values.begin(), values.end(), v) != values.end();
}

// The value rules: each reads one JSON value, checks it and says what it expected.

int64_t integer(const Json& j, const std::string& field, const FieldReader& r, int64_t lo, int64_t hi) {
  const std::string expected = lo == 1 ? "a positive integer" : "an integer >= " + std::to_string(lo);
  if (!j.is_number_integer()) r.error(field, "expected " + expected + ", got " + show(j));
  // nlohmann stores every non-negative integer as unsigned; one above INT64_MAX is only too large.
  if (j.is_number_unsigned() && j.get<uint64_t>() > static_cast<uint64_t>(hi))
    r.error(field, "must be at most " + std::to_string(hi) + ", got " + show(j));
  int64_t v = j.get<int64_t>();
  if (v < lo) r.error(field, "expected " + expected + ", got " + show(j));
  if (v > hi) r.error(field, "must be at most " + std::to_string(hi) + ", got " + show(j));
  return v;
}

template <int64_t lo, int64_t hi>
int int_in(const Json& j, const std::string& field, const FieldReader& r) {
  return static_cast<int>(integer(j, field, r, lo, hi));
}

int64_t batch_size(const Json& j, const std::string& field, const FieldReader& r) { return integer(j, field, r, 1, 65536); }
int64_t query_count(const Json& j, const std::string& field, const FieldReader& r) { return integer(j, field, r, 1, 100000000); }
int thread_count(const Json& j, const std::string& field, const FieldReader& r) { return int_in<1, 1024>(j, field, r); }

uint64_t seed(const Json& v, const std::string& field, const FieldReader& r) {
  if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
    r.error(field, "expected an integer >= 0, got " + show(v));
  return v.get<uint64_t>();
}

double positive(const Json& j, const std::string& field, const FieldReader& r) {
  if (!j.is_number() || !(j.get<double>() > 0) || !std::isfinite(j.get<double>()))
    r.error(field, "expected a positive number, got " + show(j));
  return j.get<double>();
}

double non_negative(const Json& j, const std::string& field, const FieldReader& r) {
  if (!j.is_number() || !(j.get<double>() >= 0) || !std::isfinite(j.get<double>()))
    r.error(field, "expected a number >= 0, got " + show(j));
  return j.get<double>();
}

// A relative change (0.05 = 5%) of at least 0; 1 or more is refused as a percentage typed
// as a fraction ("max_regression": 5 meant 5%).
double change_fraction(const Json& v, const std::string& field, const FieldReader& r) {
  const double x = non_negative(v, field, r);
  if (x >= 1) r.error(field, "a change is a fraction (" + show(Json(x / 100)) + " for " + show(v) + "%), not a percentage");
  return x;
}

double fraction(const Json& v, const std::string& field, const FieldReader& r) {
  if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() < 1))
    r.error(field, "expected a number between 0 and 1 (exclusive), got " + show(v));
  return v.get<double>();
}

// A positive number; a stored config's 0 is "not given" (a rate a peak search finds itself).
double positive_or_unset(const Json& v, const std::string& field, const FieldReader& r) {
  if (!r.scenario && v.is_number() && v.get<double>() == 0) return 0;
  return positive(v, field, r);
}

// The percentile a load claims, in (0, 1); a stored config's 0 is "the scenario's default".
double claimed_percentile(const Json& v, const std::string& field, const FieldReader& r) {
  if (!r.scenario && v.is_number() && v.get<double>() == 0) return 0;
  return fraction(v, field, r);
}

// A share of something, in (0, 1]: 1 is "all of them".
double rate(const Json& v, const std::string& field, const FieldReader& r) {
  if (!v.is_number() || !(v.get<double>() > 0 && v.get<double>() <= 1))
    r.error(field, "expected a number in (0, 1], got " + show(v));
  return v.get<double>();
}

double cosine(const Json& v, const std::string& field, const FieldReader& r) {
  if (!v.is_number() || !(v.get<double>() >= -1 && v.get<double>() <= 1))
    r.error(field, "expected a number between -1 and 1, got " + show(v));
  return v.get<double>();
}

bool boolean(const Json& v, const std::string& field, const FieldReader& r) {
  if (!v.is_boolean()) r.error(field, "expected true or false, got " + show(v));
  return v.get<bool>();
}

// A string that must be one of `allowed`: "expected "a" or "b", got "c"".
std::string one_of(const Json& j, const std::string& field, const FieldReader& r, const std::vector<std::string>& allowed) {
  std::string s = non_empty_string(j, field, r);
  if (!contains(allowed, s)) {
    std::vector<std::string> quoted;
    for (const std::string& a : allowed) quoted.push_back("\"" + a + "\"");
    r.error(field, "expected " + join(quoted, " or ") + ", got " + show(j));
  }
  return s;
}

// "cpu", "cuda" or "cuda:N": its form only; whether the device is there is the run's to say.
std::string device(const Json& j, const std::string& f, const FieldReader& r) {
  const std::string s = non_empty_string(j, f, r);
  if (!is_device_name(s)) r.error(f, "expected \"cpu\", \"cuda\" or \"cuda:N\", got " + show(j));
  return s;
}

std::string stop_rule(const Json& j, const std::string& f, const FieldReader& r) {
  return one_of(j, f, r, {"median-ci", "speedup-ci"});
}
std::string alternation(const Json& j, const std::string& f, const FieldReader& r) {
  return one_of(j, f, r, {"iteration", "block"});
}
std::string precision_mode(const Json& j, const std::string& f, const FieldReader& r) {
  return one_of(j, f, r, {"obey", "prefer"});
}

// A matrix value from its list: "precision 'int4' is not supported (supported: ...)".
std::string supported(const Json& v, const std::string& f, const FieldReader& r, const char* what,
                      const std::vector<std::string>& values, const char* listed) {
  if (!v.is_string()) r.error(f, "expected a string, got " + show(v));
  std::string s = v.get<std::string>();
  if (!contains(values, s))
    r.error(f, std::string(what) + " '" + s + "' is not supported (" + listed + ": " + join(values) + ")");
  return s;
}
Precision precision(const Json& v, const std::string& f, const FieldReader& r) {
  return parse_precision(supported(v, f, r, "precision", supported_precisions(), "supported"));
}
FusionLevel fusion(const Json& v, const std::string& f, const FieldReader& r) {
  return parse_fusion_level(supported(v, f, r, "fusion", supported_fusions(), "allowed"));
}

std::vector<int> cpus(const Json& j, const std::string& f, const FieldReader& r) {
  return read_list<int>(j, f, r, int_in<0, CPU_SETSIZE - 1>);
}
std::vector<std::string> names(const Json& j, const std::string& f, const FieldReader& r) {
  return read_list<std::string>(j, f, r, non_empty_string);
}

// Per-layer precision constraints, in order (the first matching pattern decides): in a
// scenario an object {PATTERN: PRECISION, ...}, stored as a list of [pattern, precision].
std::vector<LayerPrecision> layer_precisions(const Json& j, const std::string& field, const FieldReader& r) {
  std::vector<LayerPrecision> out;
  auto add = [&](const std::string& pattern, const Json& value, const std::string& f) {
    if (pattern.empty()) r.error(field, "a pattern must not be empty");
    std::string p = non_empty_string(value, f, r);
    if (!contains(supported_precisions(), p)) r.error(f, "unknown precision '" + p + "' (known: " + known_precision_names() + ")");
    out.push_back(LayerPrecision{pattern, parse_precision(p)});
  };
  if (r.scenario) {
    if (!j.is_object()) r.error(field, "expected an object, got " + show(j));
    if (j.empty()) r.error(field, "must not be empty");
    for (const auto& [pattern, value] : j.items()) add(pattern, value, field + "." + pattern);
    return out;
  }
  if (!j.is_array()) r.error(field, "expected a list of [pattern, precision] pairs, got " + show(j));
  for (size_t i = 0; i < j.size(); ++i) {
    const Json& e = j[i];
    if (!e.is_array() || e.size() != 2 || !e[0].is_string())
      r.error(element(field, i), "expected a [pattern, precision] pair, got " + show(e));
    add(e[0].get<std::string>(), e[1], element(field, i));
  }
  return out;
}

nlohmann::json layer_precisions_json(const std::vector<LayerPrecision>& layers) {
  nlohmann::json out = nlohmann::json::array();
  for (const LayerPrecision& l : layers) out.push_back({l.pattern, precision_name(l.precision)});
  return out;
}

// Calibration data: one object per batch of {graph input: .npy or .pb file}.
std::vector<std::map<std::string, std::string>> calibration_data(const Json& j, const std::string& field, const FieldReader& r) {
  if (j.is_array() && j.empty() && !r.scenario) return {};  // a stored config writes the empty default
  if (!j.is_array() || j.empty()) r.error(field, "expected a non-empty list of {input: file} objects, one per batch, got " + show(j));
  std::vector<std::map<std::string, std::string>> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string f = element(field, i);
    if (!j[i].is_object() || j[i].empty()) r.error(f, "expected an object of {input: file}, got " + show(j[i]));
    std::map<std::string, std::string> batch;
    for (const auto& [input, file] : j[i].items()) batch[input] = non_empty_string(file, f + "." + input, r);
    out.push_back(std::move(batch));
  }
  return out;
}

std::string cache_file(const Json& j, const std::string& f, const FieldReader& r) {
  if (j.is_string() && j.get<std::string>().empty() && !r.scenario) return "";  // stored: none
  return non_empty_string(j, f, r);
}

double percentile(const Json& j, const std::string& field, const FieldReader& r) {
  if (!j.is_number() || !(j.get<double>() > 0 && j.get<double>() <= 100))
    r.error(field, "expected a percentile in (0, 100], got " + show(j));
  return j.get<double>();
}

std::string calibrator(const Json& j, const std::string& f, const FieldReader& r) {
  return one_of(j, f, r, calibration_method_names());
}

// A batch range {min, opt, max} (a dynamic engine's optimization profile).
BatchRange batch_range(const Json& j, const std::string& f, const FieldReader& r) {
  if (!j.is_object()) r.error(f, "expected {\"min\": N, \"opt\": N, \"max\": N}, got " + show(j));
  for (const auto& [key, _] : j.items())
    if (key != "min" && key != "opt" && key != "max") r.error(f + "." + key, "unknown key (known: min, opt, max)");
  for (const char* key : {"min", "opt", "max"})
    if (!j.contains(key)) r.error(f + "." + key, "missing: a dynamic batch range gives min, opt and max");
  BatchRange b{batch_size(j["min"], f + ".min", r), batch_size(j["opt"], f + ".opt", r), batch_size(j["max"], f + ".max", r)};
  if (b.min > b.opt || b.opt > b.max)
    r.error(f, "expected min <= opt <= max, got " + std::to_string(b.min) + ", " + std::to_string(b.opt) + ", " + std::to_string(b.max));
  return b;
}

bool always(const CaseSpec&) { return true; }
bool loaded(const CaseSpec& s) { return !s.load.is_default(); }
bool dynamic(const CaseSpec& s) { return s.dynamic(); }
// Calibration settings change an int8 case's numbers, and only an int8 case's.
bool asks_for_int8(const CaseSpec& s) { return build_config_of(s).asks_for_int8(); }
bool with_fusion_limits(const CaseSpec& s) { return !s.fusion_limits.empty(); }
bool with_precision_constraints(const CaseSpec& s) { return !s.precision_constraints.empty(); }

// The stored config writes plugins only when there are any (or cost is switched off), so
// configs without them read as they always did.
nlohmann::json plugins_json(const CaseSpec& s) {
  return !s.plugins.empty() || !s.plugins.cost ? plugin_settings_to_json(s.plugins) : nlohmann::json();
}

}  // namespace

// .read and .write of a member read by RULE, a function (value, field, reader) -> value,
// and written by NAME, the member's name (precision_name) where it is an enum.
#define NAMED_VALUE(member, rule, name)                                                                        \
  .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) { s.member = rule(v, f, r); }, \
  .write = [](const CaseSpec& s) { return nlohmann::json(name(s.member)); }
// The same for a member nlohmann writes as it is.
#define VALUE(member, rule)                                                                                    \
  .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) { s.member = rule(v, f, r); }, \
  .write = [](const CaseSpec& s) { return nlohmann::json(s.member); }
// The same for an optional member: left out when unset.
#define OPTIONAL_VALUE(member, rule)                                                                           \
  .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) { s.member = rule(v, f, r); }, \
  .write = [](const CaseSpec& s) { return s.member ? nlohmann::json(*s.member) : nlohmann::json(); }
// The same for a setting only an int8 case has: left out of other cases' stored configs.
#define INT8_VALUE(member, rule)                                                                               \
  .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) { s.member = rule(v, f, r); }, \
  .write = [](const CaseSpec& s) { return asks_for_int8(s) ? nlohmann::json(s.member) : nlohmann::json(); }
// The same for a load setting: left out of a single-stream case's stored config.
#define LOAD_VALUE(member, rule)                                                                               \
  .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) { s.member = rule(v, f, r); }, \
  .write = [](const CaseSpec& s) { return s.load.is_default() ? nlohmann::json() : nlohmann::json(s.member); }
// A repeatable build flag holding a list of names.
#define LIST_FLAG(flag, help, target)                                                                           \
  .add_flags = [](cxxopts::Options& o, const std::string&) {                                                   \
    o.add_options()(flag, help, cxxopts::value<std::vector<std::string>>());                                  \
  },                                                                                                           \
  .from_flags = [](const cxxopts::ParseResult& a, bool, BuildConfig& c) {                                      \
    if (a.count(flag)) c.target = a[flag].as<std::vector<std::string>>();                                      \
  }

const std::vector<CaseField>& case_fields() {
  using enum InScenario;
  static const std::vector<CaseField> fields{
      // The matrix: one case per combination.
      {.path = "precision", .in_scenario = kInMatrix, .matrix_nesting = 1, NAMED_VALUE(precision, precision, precision_name),
       .in_key = always,
       .export_place = 1,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.precision = s.precision; },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("precision", "fp32, tf32 (GPU), bf16, fp16 or int8: every layer's, unless --layer-precision says otherwise",
                         cxxopts::value<std::string>()->default_value("fp32"));
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool only_given, BuildConfig& c) {
         if (only_given && !a.count("precision")) return;
         c.precision = parse_precision(a["precision"].as<std::string>(), "--precision");
       }},
      {.path = "batch", .in_scenario = kInMatrix, .matrix_nesting = 2, VALUE(batch, batch_size), .in_key = always,
       .curve_axis = true, .export_place = 2,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.batch = s.batch; },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("batch", "batch size bound at build time", cxxopts::value<int64_t>()->default_value("1"));
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool only_given, BuildConfig& c) {
         if (!only_given || a.count("batch")) c.batch = a["batch"].as<int64_t>();
       }},
      {.path = "fusion", .in_scenario = kInMatrix, .matrix_nesting = 3, NAMED_VALUE(fusion, fusion, fusion_level_name),
       .in_key = always,
       .export_place = 3,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.fusion = s.fusion; },
       .add_flags = [](cxxopts::Options& o, const std::string& default_fusion) {
         o.add_options()("fusion", "none, mark-all, standard, aggressive",
                         cxxopts::value<std::string>()->default_value(default_fusion));
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool only_given, BuildConfig& c) {
         if (!only_given || a.count("fusion")) c.fusion = parse_fusion_level(a["fusion"].as<std::string>());
       }},
      // Where the case runs: in the key (and the stored config) of device cases only, so a
      // CPU case keeps its key. The outermost loop: a device's cases run one after another.
      {.path = "device", .in_scenario = kInMatrix, .matrix_nesting = 0,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) { s.device = device(v, f, r); },
       .write = [](const CaseSpec& s) { return s.device == "cpu" ? nlohmann::json() : nlohmann::json(s.device); },
       .in_key = [](const CaseSpec& s) { return s.device != "cpu"; },
       .export_place = 6, .export_value = [](const CaseSpec& s) { return nlohmann::json(s.device); },
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.device = s.device; },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("device", "cpu, cuda or cuda:N: where the layers run", cxxopts::value<std::string>()->default_value("cpu"));
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool only_given, BuildConfig& c) {
         if (only_given && !a.count("device")) return;
         const std::string d = a["device"].as<std::string>();
         FieldReader r{[](const std::string& field, const std::string& msg) -> void { throw Error("--device: " + msg); }};
         c.device = device(nlohmann::ordered_json(d), "--device", r);
       }},
      {.path = "threads", .in_scenario = kInMatrixOrTop, .matrix_nesting = 4, VALUE(threads, thread_count), .in_key = always,
       .export_place = 4,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.threads = s.threads; }},
      // Static or dynamic engine, and a dynamic engine's batch range: in the key (and the
      // stored config) of dynamic cases only, so a static case keeps its key.
      {.path = "engine_shapes", .in_scenario = kInMatrix, .matrix_nesting = 5,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) {
         s.engine_shapes = one_of(v, f, r, {"static", "dynamic"});
       },
       .write = [](const CaseSpec& s) { return s.dynamic() ? nlohmann::json(s.engine_shapes) : nlohmann::json(); },
       .in_key = dynamic,
       .export_place = 5, .export_value = [](const CaseSpec& s) { return nlohmann::json(s.engine_shapes); },
       .to_build = [](const CaseSpec& s, BuildConfig& c) {
         if (s.dynamic()) c.dynamic_batch = s.dynamic_batch;
       }},
      {.path = "dynamic_batch", .in_scenario = kAtPath,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) { s.dynamic_batch = batch_range(v, f, r); },
       .write = [](const CaseSpec& s) {
         return s.dynamic() ? nlohmann::json{{"min", s.dynamic_batch.min}, {"opt", s.dynamic_batch.opt}, {"max", s.dynamic_batch.max}}
                            : nlohmann::json();
       },
       .in_key = dynamic},

      // Winograd convolutions: in the key (and the stored config) only when off, so cases
      // that allow them keep their keys.
      {.path = "winograd", .in_scenario = kAtPath,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) { s.winograd = boolean(v, f, r); },
       .write = [](const CaseSpec& s) { return s.winograd ? nlohmann::json() : nlohmann::json(false); },
       .in_key = [](const CaseSpec& s) { return !s.winograd; },
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.winograd = s.winograd; },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("no-winograd", "keep every float32 convolution direct (no Winograd kernels)");
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool, BuildConfig& c) {
         if (a.count("no-winograd")) c.winograd = false;
       }},
      // CUDA graphs: a matrix axis ([false, true] compares the two case by case), in the key
      // (and the stored config) only when on, so other cases keep their keys.
      {.path = "cuda_graph", .in_scenario = kInMatrixOrTop, .matrix_nesting = 6,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) { s.cuda_graph = boolean(v, f, r); },
       .write = [](const CaseSpec& s) { return s.cuda_graph ? nlohmann::json(true) : nlohmann::json(); },
       .in_key = [](const CaseSpec& s) { return s.cuda_graph; },
       .export_place = 7, .export_value = [](const CaseSpec& s) { return nlohmann::json(s.cuda_graph); },
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.cuda_graph = s.cuda_graph; },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("cuda-graph", "on a GPU, replay the engine's whole plan as one CUDA graph per run");
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool, BuildConfig& c) {
         if (a.count("cuda-graph")) c.cuda_graph = true;
       }},

      // How the case is loaded (harness/load/load_settings.h): a matrix axis, in the key (and the
      // stored config) only when not single-stream, so every case before it keeps its key.
      {.path = "load", .in_scenario = kInMatrixOrTop, .matrix_nesting = 7,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) {
         s.load.scenario = one_of(v, f, r, load_scenarios());
       },
       .write = [](const CaseSpec& s) { return s.load.is_default() ? nlohmann::json() : nlohmann::json(s.load.scenario); },
       .in_key = loaded},
      // The pool: engine instances sharing the weights, each with the case's threads; a
      // single-stream case has none, so it is one case whatever the axis holds.
      {.path = "instances", .in_scenario = kInMatrixOrTop, .matrix_nesting = 8, .axis_applies = loaded,
       LOAD_VALUE(load.instances, (int_in<1, 1024>)), .in_key = loaded},
      {.path = "load_settings.samples_per_query", .in_scenario = kAtPath, LOAD_VALUE(load.samples_per_query, (int_in<1, 65536>)),
       .in_key = [](const CaseSpec& s) { return s.load.scenario == "multi-stream"; }},
      {.path = "load_settings.target_qps", .in_scenario = kAtPath, LOAD_VALUE(load.target_qps, positive_or_unset),
       .in_key = [](const CaseSpec& s) { return s.load.scenario == "server"; }},
      {.path = "load_settings.latency_bound_ms", .in_scenario = kAtPath, LOAD_VALUE(load.latency_bound_ms, positive_or_unset),
       .in_key = [](const CaseSpec& s) { return s.load.scenario == "server"; }},
      {.path = "load_settings.percentile", .in_scenario = kAtPath, LOAD_VALUE(load.percentile, claimed_percentile)},
      {.path = "load_settings.min_duration_ms", .in_scenario = kAtPath, LOAD_VALUE(load.min_duration_ms, non_negative)},
      {.path = "load_settings.min_queries", .in_scenario = kAtPath,
       LOAD_VALUE(load.min_queries, query_count)},
      {.path = "load_settings.max_duration_ms", .in_scenario = kAtPath, LOAD_VALUE(load.max_duration_ms, positive)},
      {.path = "load_settings.seed", .in_scenario = kAtPath, LOAD_VALUE(load.seed, seed)},
      {.path = "load_settings.peak_search", .in_scenario = kAtPath, LOAD_VALUE(load.peak_search, boolean)},
      {.path = "load_settings.pin", .in_scenario = kAtPath, LOAD_VALUE(load.pin, boolean)},

      // How the case is timed: not in the case key, so a change of method keeps history.
      {.path = "timing.warmup_ms", .in_scenario = kAtPath, VALUE(timing.warmup_ms, positive)},
      {.path = "timing.warmup_iterations", .in_scenario = kAtPath, VALUE(timing.warmup_iterations, (int_in<1, INT_MAX>))},
      {.path = "timing.min_iterations", .in_scenario = kAtPath, VALUE(timing.min_iterations, (int_in<1, INT_MAX>))},
      {.path = "timing.max_iterations", .in_scenario = kAtPath, VALUE(timing.max_iterations, (int_in<1, INT_MAX>))},
      {.path = "timing.max_seconds", .in_scenario = kAtPath, VALUE(timing.max_seconds, positive)},
      {.path = "timing.target_rel_ci", .in_scenario = kAtPath, VALUE(timing.target_rel_ci, fraction)},
      {.path = "timing.stop_rule", .in_scenario = kAtPath, VALUE(timing.stop_rule, stop_rule)},
      {.path = "timing.pin_cpus", .in_scenario = kAtPath, VALUE(timing.pin_cpus, cpus)},
      {.path = "timing.inject_delay_us", .in_scenario = kAtPath, VALUE(timing.inject_delay_us, non_negative)},
      {.path = "timing.inject_slowdown", .in_scenario = kAtPath, VALUE(timing.inject_slowdown, change_fraction)},
      {.path = "timing.processes", .in_scenario = kAtPath, VALUE(timing.processes, (int_in<1, 64>))},
      {.path = "timing.max_pairs", .in_scenario = kAtPath, VALUE(timing.max_pairs, (int_in<2, 1000>))},
      {.path = "timing.paired_detectable", .in_scenario = kAtPath, VALUE(timing.paired_detectable, change_fraction)},
      {.path = "timing.process_samples", .in_scenario = kAtPath, VALUE(timing.process_samples, (int_in<1, 1000000>))},
      {.path = "timing.alternation", .in_scenario = kAtPath, VALUE(timing.alternation, alternation)},
      {.path = "timing.block_iterations", .in_scenario = kAtPath, VALUE(timing.block_iterations, (int_in<1, 100000>))},
      {.path = "timing.disturbance_cpus", .in_scenario = kAtPath, VALUE(timing.disturbance_cpus, non_negative)},
      {.path = "timing.disturbance_steal", .in_scenario = kAtPath, VALUE(timing.disturbance_steal, fraction)},
      {.path = "timing.include_copies", .in_scenario = kAtPath,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) {
         s.timing.include_copies = boolean(v, f, r);
       },
       .write = [](const CaseSpec& s) { return s.timing.include_copies ? nlohmann::json(true) : nlohmann::json(); }},
      {.path = "timing.disturbance_retries", .in_scenario = kAtPath, VALUE(timing.disturbance_retries, (int_in<0, 10>))},

      // Tolerances: a scenario's "accuracy" block is for fp32 cases and holds a block per
      // other precision; expand_cases picks each case's (scenario.cpp).
      {.path = "accuracy.atol", .in_scenario = kAtPath, VALUE(accuracy.atol, non_negative)},
      {.path = "accuracy.rtol", .in_scenario = kAtPath, VALUE(accuracy.rtol, non_negative)},
      {.path = "accuracy.elementwise", .in_scenario = kNotThere, VALUE(accuracy.elementwise, boolean)},
      {.path = "accuracy.min_cosine", .in_scenario = kAtPath, OPTIONAL_VALUE(accuracy.min_cosine, cosine)},

      {.path = "gate.min_speedup", .in_scenario = kAtPath, OPTIONAL_VALUE(gate.min_speedup, positive)},
      {.path = "gate.max_regression", .in_scenario = kAtPath, OPTIONAL_VALUE(gate.max_regression, change_fraction)},
      {.path = "gate.max_abs_err", .in_scenario = kAtPath, OPTIONAL_VALUE(gate.max_abs_err, non_negative)},
      {.path = "gate.min_valid_rate", .in_scenario = kAtPath, OPTIONAL_VALUE(gate.min_valid_rate, rate)},
      {.path = "gate.max_claimed_ms", .in_scenario = kAtPath, OPTIONAL_VALUE(gate.max_claimed_ms, positive)},

      {.path = "seed", .in_scenario = kAtPath, VALUE(seed, seed), .in_key = always},

      // A per-layer profile after the timing (harness/cases/case_profile.h): not in the key, and
      // left out of the stored config when off, so cases without it keep their configs.
      {.path = "profile.iterations", .in_scenario = kAtPath,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) {
         s.profile_iterations = int_in<0, 100000>(v, f, r);
       },
       .write = [](const CaseSpec& s) { return s.profile_iterations ? nlohmann::json(s.profile_iterations) : nlohmann::json(); }},

      // Where fusion must stop: in the case key when any is set (absent otherwise, so the
      // keys of cases without limits stay what they were). The engine's BuildConfig names
      // the op types exclude_op_types, its plan format's key.
      {.path = "fusion_limits.exclude_nodes", .in_scenario = kAtPath, VALUE(fusion_limits.exclude_nodes, names),
       .in_key = with_fusion_limits,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.exclude_nodes = s.fusion_limits.exclude_nodes; },
       LIST_FLAG("exclude-node", "node-name glob fusion must leave alone (repeatable)", exclude_nodes)},
      {.path = "fusion_limits.exclude_ops", .in_scenario = kAtPath, VALUE(fusion_limits.exclude_ops, names),
       .in_key = with_fusion_limits,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.exclude_op_types = s.fusion_limits.exclude_ops; },
       LIST_FLAG("exclude-op", "op type fusion must leave alone (repeatable)", exclude_op_types)},
      {.path = "fusion_limits.partition_points", .in_scenario = kAtPath,
       VALUE(fusion_limits.partition_points, names), .in_key = with_fusion_limits,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.partition_points = s.fusion_limits.partition_points; },
       LIST_FLAG("partition", "tensor name fusion may not cross (repeatable)", partition_points)},

      // Per-layer precision constraints: in the case key when there are any.
      {.path = "precision_constraints.mode", .in_scenario = kAtPath, VALUE(precision_constraints.mode, precision_mode),
       .in_key = with_precision_constraints,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.precision_mode = parse_precision_mode(s.precision_constraints.mode); },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("precision-mode", "obey: a layer constraint that cannot be met fails the build; prefer: it falls back, logged",
                         cxxopts::value<std::string>()->default_value("prefer"));
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool only_given, BuildConfig& c) {
         if (!only_given || a.count("precision-mode"))
           c.precision_mode = parse_precision_mode(a["precision-mode"].as<std::string>());
       }},
      {.path = "precision_constraints.layers", .in_scenario = kAtPath,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) {
         s.precision_constraints.layers = layer_precisions(v, f, r);
       },
       .write = [](const CaseSpec& s) { return layer_precisions_json(s.precision_constraints.layers); },
       .in_key = with_precision_constraints,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.layer_precisions = s.precision_constraints.layers; },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("layer-precision",
                         "PATTERN=PRECISION: node-name glob or op type, e.g. 'Softmax=fp32' (repeatable; first match wins)",
                         cxxopts::value<std::vector<std::string>>());
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool, BuildConfig& c) {
         if (!a.count("layer-precision")) return;
         c.layer_precisions.clear();
         for (const std::string& s : a["layer-precision"].as<std::vector<std::string>>())
           c.layer_precisions.push_back(parse_layer_precision(s));
       }},

      // int8 calibration (harness/cases/calibration.h): in the key of int8 cases only; the cache
      // file is where thresholds are kept, not how they were found.
      {.path = "calibration.method", .in_scenario = kAtPath, INT8_VALUE(calibration.method, calibrator), .in_key = asks_for_int8,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.calibration.method = s.calibration.method; },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("calibrator", "int8 calibration: minmax, percentile or entropy",
                         cxxopts::value<std::string>()->default_value("entropy"));
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool only_given, BuildConfig& c) {
         if (only_given && !a.count("calibrator")) return;
         c.calibration.method = a["calibrator"].as<std::string>();
         parse_calibration_method(c.calibration.method);
       }},
      {.path = "calibration.percentile", .in_scenario = kAtPath, INT8_VALUE(calibration.percentile, percentile),
       .in_key = asks_for_int8,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.calibration.percentile = s.calibration.percentile; }},
      {.path = "calibration.batches", .in_scenario = kAtPath, INT8_VALUE(calibration.batches, (int_in<1, 10000>)),
       .in_key = asks_for_int8,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.calibration.batches = s.calibration.batches; },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("calibration-batches", "int8 calibration: seeded random batches",
                         cxxopts::value<int>()->default_value("8"));
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool only_given, BuildConfig& c) {
         if (!only_given || a.count("calibration-batches")) c.calibration.batches = a["calibration-batches"].as<int>();
       }},
      {.path = "calibration.seed", .in_scenario = kAtPath, INT8_VALUE(calibration.seed, seed), .in_key = asks_for_int8,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.calibration.seed = s.calibration.seed; }},
      {.path = "calibration.data", .in_scenario = kAtPath, INT8_VALUE(calibration.data, calibration_data), .in_key = asks_for_int8,
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.calibration.data = s.calibration.data; }},
      {.path = "calibration.cache", .in_scenario = kAtPath, INT8_VALUE(calibration.cache, cache_file),
       .to_build = [](const CaseSpec& s, BuildConfig& c) { c.calibration.cache = s.calibration.cache; },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("calibration-cache", "int8 calibration cache file: read when it matches the model and settings, else written",
                         cxxopts::value<std::string>());
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool, BuildConfig& c) {
         if (a.count("calibration-cache")) c.calibration.cache = a["calibration-cache"].as<std::string>();
       }},

      // Shape inputs: a graph input's value, bound at build time; in the key when given,
      // so another value is another case.
      {.path = "shape_inputs", .in_scenario = kAtPath,
       .read = [](const Json& v, const std::string& f, const FieldReader& r, CaseSpec& s) {
         if (!v.is_object() || (v.empty() && r.scenario)) r.error(f, "expected an object of {input: value}, got " + show(v));
         for (const auto& [input, value] : v.items()) {
           const nlohmann::json given = nlohmann::json::parse(value.dump());
           try {
             shape_input_tensor(given, f + "." + input);
           } catch (const Error&) {
             r.error(f + "." + input, "expected a number or a list of 1 to 64 numbers, got " + show(value));
           }
           s.shape_inputs[input] = given;
         }
       },
       .write = [](const CaseSpec& s) { return s.shape_inputs.empty() ? nlohmann::json() : nlohmann::json(s.shape_inputs); },
       .in_key = [](const CaseSpec& s) { return !s.shape_inputs.empty(); },
       .to_build = [](const CaseSpec& s, BuildConfig& c) {
         for (const auto& [input, value] : s.shape_inputs) c.constant_inputs[input] = shape_input_tensor(value, "shape_inputs." + input);
       },
       .add_flags = [](cxxopts::Options& o, const std::string&) {
         o.add_options()("shape-input", "NAME=V[,V...]: bind a shape input to these values at build time (repeatable)",
                         cxxopts::value<std::vector<std::string>>());
       },
       .from_flags = [](const cxxopts::ParseResult& a, bool, BuildConfig& c) {
         if (!a.count("shape-input")) return;
         // cxxopts splits a list option at commas: "shape=3,2" comes as "shape=3", "2".
         std::vector<std::string> joined;
         for (const std::string& part : a["shape-input"].as<std::vector<std::string>>()) {
           if (part.find('=') == std::string::npos && !joined.empty()) joined.back() += "," + part;
           else joined.push_back(part);
         }
         for (const std::string& given : joined) {
           const size_t eq = given.find('=');
           if (eq == std::string::npos || eq == 0) throw Error("--shape-input: expected NAME=V[,V...], got '" + given + "'");
           const std::string name = given.substr(0, eq), field = "--shape-input " + name;
           nlohmann::json values = nlohmann::json::parse("[" + given.substr(eq + 1) + "]", nullptr, false);
           if (values.is_discarded()) throw Error(field + ": expected numbers separated by commas, got '" + given.substr(eq + 1) + "'");
           c.constant_inputs[name] = shape_input_tensor(values, field);
         }
       }},

      // Plugins: one reader and writer of their own (harness/cases/plugin_settings.h); a scenario
      // gives them as "plugins", "insert_plugins" and "plugin_cost" (scenario.cpp).
      {.path = "plugins", .in_scenario = kNotThere,
       .read = [](const Json& v, const std::string&, const FieldReader& r, CaseSpec& s) {
         s.plugins = plugin_settings_from_json(nlohmann::json(v), r.fail);
       },
       .write = plugins_json,
       .in_key = [](const CaseSpec& s) { return !s.plugins.empty(); },
       .key_value = [](const CaseSpec& s) { return plugin_settings_key(s.plugins); }},
  };
  return fields;
}

#undef NAMED_VALUE
#undef VALUE
#undef OPTIONAL_VALUE
#undef INT8_VALUE
#undef LOAD_VALUE
#undef LIST_FLAG

const CaseField& case_field(const std::string& path) {
  for (const CaseField& f : case_fields())
    if (path == f.path) return f;
  throw Error("no case setting '" + path + "'");
}

namespace {

// The rows `member` numbers (above 0, or from 0 with `from_zero`), in its order.
std::vector<const CaseField*> numbered(int CaseField::*member, bool from_zero) {
  std::vector<const CaseField*> rows;
  for (const CaseField& f : case_fields())
    if (f.*member > 0 || (from_zero && f.*member == 0)) rows.push_back(&f);
  std::sort(rows.begin(), rows.end(), [&](const CaseField* a, const CaseField* b) { return a->*member < b->*member; });
  return rows;
}

}  // namespace

const std::vector<const CaseField*>& matrix_axes() {
  static const std::vector<const CaseField*> axes = numbered(&CaseField::matrix_nesting, true);
  return axes;
}

const std::vector<const CaseField*>& exported_fields() {
  static const std::vector<const CaseField*> fields = numbered(&CaseField::export_place, false);
  return fields;
}

nlohmann::json export_value(const CaseField& f, const CaseSpec& s) { return f.export_value ? f.export_value(s) : f.write(s); }

BuildConfig build_config_of(const CaseSpec& s) {
  BuildConfig c;
  for (const CaseField& f : case_fields())
    if (f.to_build) f.to_build(s, c);
  return c;
}

}  // namespace fb
