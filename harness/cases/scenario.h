// Scenario files: JSON with comments that name a model and the matrix of settings to
// benchmark it under. Loading is strict: every mistake is an fb::Error naming the file and
// the field path ("matrix.batch[1]"), so a typo never silently benchmarks the wrong thing.
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "harness/cases/case.h"
#include "harness/cases/case_fields.h"

namespace fb {

// One matrix axis of a scenario: a row of the case table (CaseField::matrix_nesting) and
// the values the scenario gives it.
struct MatrixAxis {
  const CaseField* field;
  // As the scenario gives them, each checked by the row's reader: "matrix": {"batch": [1, 8]},
  // or one value at the top level ("threads": 2). Empty: not given, so every case keeps the
  // value it starts from (`settings`, the default).
  std::vector<OrderedJson> values;
};

struct Scenario {
  std::string name;  // "name" field; defaults to the file's stem
  std::string file;  // absolute path of the scenario file
  // "zoo:..." kept as written, or an ONNX path resolved against the scenario file's folder
  // (absolute, normalized; the file exists when loading succeeded).
  std::string model;
  std::string description;
  // Every axis of the case table, outermost first: one case per combination of their values.
  std::vector<MatrixAxis> matrix;
  // One axis's values ("batch"), each set on `settings`: what the cases take from it.
  std::vector<CaseSpec> axis(const std::string& path) const;
  // Every other setting, as each case starts from it (harness/cases/case_fields.h): "timing",
  // "accuracy" (atol, rtol, min_cosine: for fp32 cases), "gate", "seed", "fusion_limits",
  // "precision_constraints", and the plugins ("plugins", "insert_plugins", "plugin_cost").
  // Its matrix axes' values are the defaults: the matrix gives them.
  CaseSpec settings;
  // "accuracy": {"bf16": {min_cosine, atol, rtol}, ...}: for the cases of that precision
  // (fp32's, when the scenario names one, is the top-level atol/rtol/min_cosine); a
  // precision without a block gets default_accuracy() for its device (harness/cases/accuracy.h).
  std::map<Precision, AccuracyConfig> precision_accuracy;
};

// The values a scenario may name. The one place these lists live: add a precision or a
// fusion level here when the engine learns it.
const std::vector<std::string>& supported_precisions();  // the engine's known_precisions(), named
const std::vector<std::string>& supported_fusions();     // "none", "mark-all", "standard", "aggressive"

// Reads and validates a scenario file; throws fb::Error naming the file and field.
Scenario load_scenario(const std::string& path);
// The same from text; `path` is used in messages and to resolve a relative model path.
Scenario parse_scenario(const std::string& text, const std::string& path);

// The cross product of the matrix axes, nested as the case table says (device × precision ×
// batch × fusion × threads × engine shapes × CUDA graph × load × instances: device
// outermost, the two forms of a case with and without a CUDA graph side by side); an axis
// a case does not have (instances of a single-stream case) adds no cases. Each case gets
// its precision's accuracy config. model_hash is left empty: the runner fills it once it
// has read the model.
std::vector<CaseSpec> expand_cases(const Scenario& s);

}  // namespace fb
