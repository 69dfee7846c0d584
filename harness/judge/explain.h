// Why a case got slower or faster, in the model's own names: the differential of two cases'
// stored per-layer profiles (harness/cases/case_profile.h) and builds. Layers of the two builds
// are matched through the ONNX nodes they were built from, so a fusion group that split or
// merged is one region whose time is compared whole; each region carries the fusion
// decisions that differ between the builds (pass, root node, refusal reason), and the
// kernel, precision and shape changes of its layers. Module paths are compared through
// the profiler's apportioned node times. The regions' changes add up to the change of the
// profiled total, which is reconciled with the measured end-to-end change and its interval.
#pragma once
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "harness/judge/compare.h"
#include "harness/judge/environment_diff.h"
#include "harness/stats/bootstrap.h"

namespace fb {

// One side of an explanation: a stored case and the run it belongs to.
struct ExplainSide {
  const StoredCase* stored = nullptr;
  const RunInfo* run = nullptr;
};

// A time on both sides and its change, with the 95% interval of the change where samples
// allow (NaN bounds where they do not).
struct TimeChange {
  double baseline_ms = 0, candidate_ms = 0;
  double delta_ms() const { return candidate_ms - baseline_ms; }
  Interval delta_ci{std::numeric_limits<double>::quiet_NaN(), std::numeric_limits<double>::quiet_NaN()};
};

// A fusion pass's outcome at one root node on both sides, where they differ.
struct DecisionChange {
  std::string pass, root;
  std::string baseline, candidate;  // "fused into 'X' (N nodes)", "refused: WHY", "not tried"
};

// Layers of the two builds joined by shared ONNX nodes (or, for a layer of none, its name).
struct RegionChange {
  std::string module;  // the nodes' common module path ("" when they share none)
  std::string name;    // how the text names it: its layer's name, or the module and node count
  std::string shape;   // "same layer", "split", "merged", "regrouped", "only in baseline", "only in candidate"
  size_t nodes = 0;    // ONNX nodes it covers
  std::vector<int> baseline_layers, candidate_layers;
  TimeChange time;
  std::vector<std::string> layer_changes;  // kind, kernel, precision, shapes of a layer in both builds
  std::vector<DecisionChange> decisions;
  // Built otherwise in the two builds: another grouping, a decision or a layer's kernel,
  // precision, kind or shapes.
  bool built_differently() const;
};

struct ModuleChange {
  std::string module;
  TimeChange time;
  bool estimated = false;  // includes time apportioned from fused layers
};

struct FieldChange {
  std::string field, baseline, candidate;
};

struct Explanation {
  std::string baseline_label, candidate_label, baseline_key, candidate_key;
  int64_t baseline_run = 0, candidate_run = 0;
  std::optional<CaseJudgement> judgement;  // compare's verdict, when the two are a case and its baseline
  TimeChange measured;                     // engine medians end to end, interval by bootstrap
  TimeChange reference;                    // the reference executor's medians, the same way
  double baseline_speedup = 0, candidate_speedup = 0;
  TimeChange profiled;                     // sums of layer medians, interval of the per-run sums
  int baseline_iterations = 0, candidate_iterations = 0;
  // Each side's layers' sum over its engine's timed median: near 1 undisturbed; well above
  // (kProfileSlack), the machine slowed the profiled pass.
  double baseline_profile_ratio = 0, candidate_profile_ratio = 0;
  std::vector<RegionChange> regions;       // largest |change| first
  std::vector<ModuleChange> modules;       // largest |change| first
  std::vector<FieldChange> configuration;  // case settings that differ
  double baseline_build_ms = 0, candidate_build_ms = 0;
  int64_t baseline_arena_bytes = 0, candidate_arena_bytes = 0;
  std::vector<EnvField> environment;  // the differing fields only
  // What the regions leave of the measured change: measured - profiled.
  double unexplained_ms() const { return measured.delta_ms() - profiled.delta_ms(); }
  // Whether the profiled change lies within the measured change's interval.
  bool reconciled() const;
};

// Explains `candidate` against `baseline`. fb::Error naming the case and run when either
// has no stored profile.
Explanation explain_cases(const ExplainSide& baseline, const ExplainSide& candidate,
                          std::optional<CaseJudgement> judgement = std::nullopt);

nlohmann::json explanation_to_json(const Explanation& e);
// A region's layer changes as text and the report show them: a group's layers, `per_side`
// of each side, then how many more (--json lists them all).
std::vector<std::string> layer_changes_shown(const RegionChange& r, size_t per_side = 4);
// What makes a side's layer times suspect: its profiled pass ran well above its timing.
std::vector<std::string> cautions(const Explanation& e);
// For people: the `top` largest regions and modules, every decision and setting that differs.
std::string explanation_text(const Explanation& e, size_t top = 8);

}  // namespace fb
