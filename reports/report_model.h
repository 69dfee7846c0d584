// The report data model: everything a report shows about one run, gathered once from the
// store and judged once — the run's cases, its baseline and the compare verdicts, the gate,
// each case's nightly history with its change points, the environment differences, the
// stored engine profiles — so that renderers (html_report) only format. It lives in
// reports/, not harness/: it is a view assembled for reading, built from the harness's
// verdicts (compare.h, gate.h, history.h) as they are, never a second opinion of its own.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/judge/compare.h"
#include "harness/judge/environment_diff.h"
#include "harness/judge/explain.h"
#include "harness/judge/gate.h"
#include "harness/judge/history.h"
#include "harness/store/result_store.h"
#include "reports/run_cases.h"

namespace fb {

struct ReportOptions {
  std::optional<int64_t> run;       // default: the latest run
  std::optional<int64_t> baseline;  // default: the run before `run` (or the latest of the baseline database)
  int last = 60;                    // runs of history per case, ending at `run`
  CompareOptions compare;           // as `fusebench compare` (alpha 0.01, 3% effect)
  ChangePointOptions change_points; // as `fusebench history`
  GateRules gate;                   // none: each case's stored scenario rules, as `fusebench gate`
};

// The three series history follows per case, as `fusebench history --metric`.
enum class Metric { kEngine = 0, kReference = 1, kSpeedup = 2 };
constexpr size_t kMetrics = 3;
const char* metric_name(Metric m);  // "engine", "reference", "speedup"

// One run's figures for a case: each metric's value and its 95% interval (the median's
// order-statistic interval; the speedup's bootstrap interval).
struct HistoryPoint {
  size_t run = 0;  // index into ReportModel::history_runs
  std::array<double, kMetrics> value{}, low{}, high{};
  bool noisy = false;
};

struct CaseTrend {
  std::vector<HistoryPoint> points;  // oldest first; runs where the case errored or was absent are left out
  // Per metric, the change points e_divisive found in that metric's series; a change's
  // index is into `points`.
  std::array<std::vector<ChangePoint>, kMetrics> changes;
};

// One engine layer as the report's layer table shows it: the case's stored layer map
// (kernel, precision, work per run), with time from the matching stored profile when there
// is one.
struct LayerRow {
  int index = 0;
  std::string name, kind, kernel, precision;
  std::vector<std::string> sources;
  double flops = 0, bytes = 0;        // per run (0: not counted)
  bool profiled = false;              // the figures below come from a stored profile
  double ms = 0, share = 0;           // median time and share of the profile's total
  double gflops = 0, peak_share = 0;  // achieved, and as a share of the machine's measured fp32 peak
  std::optional<double> baseline_ms;  // the same layer (index and name) in the baseline's profile
};

// A pass's effect, read from the build log's "after PASS: N layers (K rewrites)" lines.
struct PassSummary {
  std::string pass;
  int layers_after = 0;
  int rewrites = 0;
};

struct EngineView {
  std::optional<StoredProfile> profile, baseline_profile;  // matched as described in the .cpp
  std::vector<LayerRow> layers;          // engine order
  std::vector<size_t> most_changed;      // indices into layers changed by 1% or more, largest |change| first
  std::vector<ModuleProfile> modules;    // the profile's roll-up, by path
  std::vector<PassSummary> passes;
};

// This run's result (samples and layer map included) and its case key, as load_run_cases
// reads them for every report (export and JUnit too), then what the report adds.
struct ReportCase : KeyedCase {
  std::optional<CaseResult> baseline;      // the baseline run's result for the key
  // `fusebench compare`'s judgement of the case against the baseline (same history, same
  // machine rule); absent when a side is missing or errored.
  std::optional<CaseJudgement> judgement;
  std::string compare_note;                // then: why
  CaseTrend history;
  EngineView engine;
  // A regression's or improvement's explanation, as `fusebench explain` gives it, when both
  // sides stored their profiles (scenario "profile"); else explanation_note says which did not.
  std::optional<Explanation> explanation;
  std::string explanation_note;
};

// One fingerprint field of the run beside the baseline's.
// Cases that differ only in their batch (CaseSpec::curve_key): the speedup-against-batch
// curve, drawn beside the other curves of its model and thread count.
struct BatchCurve {
  std::string model;
  int threads = 1;
  // "fp32 standard", then what else sets the curve apart (" dynamic[1..16] no-winograd
  // cuda-graph cuda", CaseSpec::variant_label), numbered where that still leaves two alike
  // (another seed, other fusion limits): "fp32 standard (2)".
  std::string name;
  std::vector<size_t> cases;  // indices into ReportModel::cases, by batch
};

struct ReportModel {
  std::string db_path;
  StoredRun run;
  std::optional<StoredRun> baseline;
  std::string baseline_name;           // "run 6" or "other.db run 3"; "" without a baseline
  // The machines of the run and the baseline (machine_fingerprint) and whether they agree:
  // when not, compare and gate judge on the speedup only.
  std::string machine, baseline_machine;
  bool same_machine = true;
  ReportOptions options;
  std::vector<StoredRun> history_runs; // oldest first, ending with `run`
  std::vector<ReportCase> cases;       // the run's order
  GateReport gate;                     // gate.cases[i] judges cases[i]
  std::vector<EnvField> environment;   // the run's fingerprint (and the baseline's)
  std::vector<BatchCurve> batch_curves;
  // Indices into cases, by compare's verdict: slower (largest speedup loss first), faster
  // (largest gain first), noisy (compare said noisy or environment, or the timer flagged the
  // case), errored.
  std::vector<size_t> regressions, improvements, noisy, errors;
};

// Builds the model. `baseline_store` (may be null) takes the baseline from another
// database. fb::Error when the store has no runs, or a named run is absent.
ReportModel build_report_model(const ResultStore& store, const ReportOptions& options,
                               const ResultStore* baseline_store = nullptr);

// A model of a run's cases alone, as export reads them: no baseline, history or gate.
ReportModel cases_model(RunCases run);
// A model of the gate's verdict alone (`fusebench gate`'s own, with its command line's
// rules): its cases are the verdict's, in its order.
ReportModel gate_model(const GateReport& gate);

// "after PASS: N layers (K rewrites)" lines of a build log, in order.
std::vector<PassSummary> pass_summaries(const std::string& build_log);

}  // namespace fb
