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

namespace fb {

struct Scenario {
  std::string name;  // "name" field; defaults to the file's stem
  std::string file;  // absolute path of the scenario file
  // "zoo:..." kept as written, or an ONNX path resolved against the scenario file's folder
  // (absolute, normalized; the file exists when loading succeeded).
  std::string model;
  std::string description;
  std::vector<std::string> precisions{"fp32"};
  std::vector<int64_t> batches{1};
  std::vector<std::string> fusions{"standard"};
  std::vector<int> threads{1};
  std::vector<std::string> devices{"cpu"};  // "matrix": {"device": ["cpu", "cuda"]}  // "threads": 2  or  "matrix": {"threads": [1, 2]}
  // "matrix": {"engine_shapes": ["static", "dynamic"]}: static engines, built for each
  // case's batch, and/or dynamic ones built for "dynamic_batch" (harness/cases/case.h).
  std::vector<std::string> engine_shapes{"static"};
  // "cuda_graph": true  or  "matrix": {"cuda_graph": [false, true]} (BuildConfig::cuda_graph).
  std::vector<bool> cuda_graphs{false};
  // "load": "server"  or  "matrix": {"load": [...]} (harness/load/load_settings.h), and the pool's
  // size: "instances": 2  or  "matrix": {"instances": [1, 2]}.
  std::vector<std::string> loads{"single-stream"};
  std::vector<int> instances{1};
  // Every other setting, as each case starts from it (harness/cases/case_fields.h): "timing",
  // "accuracy" (atol, rtol, min_cosine: for fp32 cases), "gate", "seed", "fusion_limits",
  // "precision_constraints", and the plugins ("plugins", "insert_plugins", "plugin_cost").
  // Its precision, batch, fusion and threads are unused: the matrix gives them.
  CaseSpec settings;
  // "accuracy": {"bf16": {min_cosine, atol, rtol}, ...}: for the cases of that precision
  // (fp32's, when the scenario names one, is the top-level atol/rtol/min_cosine); a
  // precision without a block gets default_accuracy() for its device (harness/cases/accuracy.h).
  std::map<std::string, AccuracyConfig> precision_accuracy;
};

// The values a scenario may name. The one place these lists live: add a precision or a
// fusion level here when the engine learns it.
const std::vector<std::string>& supported_precisions();  // the engine's known_precisions()
const std::vector<std::string>& supported_fusions();     // "none", "mark-all", "standard", "aggressive"

// Reads and validates a scenario file; throws fb::Error naming the file and field.
Scenario load_scenario(const std::string& path);
// The same from text; `path` is used in messages and to resolve a relative model path.
Scenario parse_scenario(const std::string& text, const std::string& path);

// The cross product device × precision × batch × fusion × threads × engine shapes × CUDA
// graph × load × instances, nested in that order (device outermost; the two forms of a case with and without a
// CUDA graph side by side); each case gets its precision's accuracy config. model_hash is left empty:
// the runner fills it once it has read the model.
std::vector<CaseSpec> expand_cases(const Scenario& s);

}  // namespace fb
