// One table of a case's settings (CaseSpec): each row says where a setting lives in JSON,
// how it is read and checked, how it is written, whether it is part of the case key, where
// it lands in the engine's BuildConfig, and its build flag on the command line; for a
// matrix axis, where its loop nests; whether it separates batch curves; its export column.
// The scenario reader and its matrix, the stored config (CaseSpec::to_json / from_json), the
// case key and the batch curve's key, the runner's BuildConfig, the build flags and
// `fusebench export` all walk this table, so a new setting is one row here plus its struct
// member (and, for a build setting, its BuildConfig member and its row in
// engine/plan/build_config_json.cpp, which the engine owns).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config/build_config.h"
#include "harness/cases/case.h"

namespace cxxopts {
class Options;
class ParseResult;
}  // namespace cxxopts

namespace fb {

// Scenario files keep their keys' order (the first matching precision constraint wins).
using OrderedJson = nlohmann::ordered_json;

// How a row's reader reports and which document it reads.
struct FieldReader {
  // Says what is wrong with the field (its full path) and throws; the caller adds the file.
  FieldError fail;
  // A scenario file, or a config fusebench stored. They differ only in form: a stored
  // config writes every list, empty ones too, where a scenario leaves the field out;
  // precision constraints are an object of PATTERN: PRECISION in a scenario, a list of
  // pairs when stored (stored JSON sorts object keys, and the order is the meaning).
  bool scenario = false;
  [[noreturn]] void error(const std::string& field, const std::string& msg) const;
};

// Where a scenario gives a setting.
enum class InScenario {
  kAtPath,    // at its path ("seed", "timing.warmup_ms")
  kInMatrix,  // as a list under "matrix" ("matrix.batch": [1, 8]): one case per value
  kInMatrixOrTop,  // the same, or one value at the top level ("threads": 2)
  kNotThere,  // not there, or in a form of its own (scenario.cpp: accuracy per precision, plugins)
};

struct CaseField {
  const char* path;  // in a stored config and a scenario: "batch", "timing.warmup_ms"
  InScenario in_scenario;
  // A matrix axis's loop in expand_cases: 0 is the outermost (a device's cases run one after
  // another), each axis its own; a new axis takes the next number, the innermost loop.
  int matrix_nesting = -1;
  // A matrix axis only some cases have (a pool's size: only a load other than single-stream
  // serves from a pool): every other case is one case, keeping the default. nullptr: all.
  bool (*axis_applies)(const CaseSpec& s) = nullptr;
  // Reads and checks the value at `path` (`field` names it in errors) into the spec.
  void (*read)(const OrderedJson& v, const std::string& field, const FieldReader& r, CaseSpec& s);
  // The stored value; null leaves the key out (an optional that is not set).
  nlohmann::json (*write)(const CaseSpec& s);
  // Part of the case key when this says so (nullptr: never); key_value, when given, is
  // what the key holds instead of the stored value.
  bool (*in_key)(const CaseSpec& s) = nullptr;
  nlohmann::json (*key_value)(const CaseSpec& s) = nullptr;
  // The batch curve (speedup against batch, reports/report_model.h) runs along this setting:
  // cases that differ only here share a curve; every other setting in the key separates them.
  bool curve_axis = false;
  // Its column in `fusebench export` (reports/export.cpp): its place among the settings'
  // columns, 0 for none. A dashboard may read by position, so a new column takes the next
  // place, after every other; places up to kExportPlacesBeforeStatistics (the first
  // format's) come before the statistics, later ones after them. export_value is the
  // column's value for every case (write's, when null, for a setting it always writes).
  int export_place = 0;
  nlohmann::json (*export_value)(const CaseSpec& s) = nullptr;
  // Where it lands in the engine's BuildConfig; nullptr: not a build setting.
  void (*to_build)(const CaseSpec& s, BuildConfig& c) = nullptr;
  // Its build flags (`fusebench build`, `inspect`, `profile`, `exec`), added to `opts`, and
  // what the given ones set in a BuildConfig; nullptr: no flag.
  void (*add_flags)(cxxopts::Options& opts, const std::string& default_fusion) = nullptr;
  void (*from_flags)(const cxxopts::ParseResult& args, bool only_given, BuildConfig& c) = nullptr;
};

// Every setting, in the order scenario messages list them.
const std::vector<CaseField>& case_fields();
const CaseField& case_field(const std::string& path);

// The matrix axes, outermost first (CaseField::matrix_nesting).
const std::vector<const CaseField*>& matrix_axes();

// The exported settings in their columns' order, and how many of them come before the statistics.
constexpr int kExportPlacesBeforeStatistics = 4;
const std::vector<const CaseField*>& exported_fields();
nlohmann::json export_value(const CaseField& f, const CaseSpec& s);

// The engine's build configuration for a case.
BuildConfig build_config_of(const CaseSpec& s);

// A shape input's value as a scenario or --shape-input gives it (a number or a list of at
// most 64 numbers) as a tensor: int64 when every value is an integer, float32 otherwise.
// `field` names it in errors.
Tensor shape_input_tensor(const nlohmann::json& value, const std::string& field);

// The value readers the table's rows share with the rest of a scenario.
// A JSON value as a message shows it: short, so a stray object does not flood the line.
std::string show(const OrderedJson& j);
std::string element(const std::string& field, size_t i);  // "matrix.batch[1]"
std::string non_empty_string(const OrderedJson& j, const std::string& field, const FieldReader& r);

// A list of distinct values, each read by `read_one(value, field, r)`. A scenario leaves a
// field out for its default rather than giving an empty list; a stored config writes
// empty lists.
template <class T, class ReadOne>
std::vector<T> read_list(const OrderedJson& j, const std::string& field, const FieldReader& r, ReadOne read_one) {
  if (!j.is_array()) r.error(field, "expected a list, got " + show(j));
  if (j.empty() && r.scenario) r.error(field, "must not be empty (leave the field out for the default)");
  std::vector<T> out;
  for (size_t i = 0; i < j.size(); ++i) {
    T v = read_one(j[i], element(field, i), r);
    for (size_t k = 0; k < out.size(); ++k)
      if (out[k] == v)
        r.error(element(field, i), "duplicate value " + show(j[i]) + " (also at " + element(field, k) + ")");
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace fb
