// A case is the unit of work: a self-contained specification in (CaseSpec) and a
// self-contained result out (CaseResult). Nothing between reaches for global state, so a
// case can run in-process, in a worker process or on an MPI rank.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fb {

struct TimingConfig {
  double warmup_ms = 200;        // warm-up lasts at least this long...
  int warmup_iterations = 3;     // ...and at least this many iterations
  int min_iterations = 20;       // samples kept per executor, at least
  int max_iterations = 100000;   // and at most
  double max_seconds = 10;       // time cap for one executor's timed phase
  double target_rel_ci = 0.01;   // stop when the median's 95% CI half-width / median falls below
};

struct AccuracyConfig {
  double atol = 1e-4;
  double rtol = 1e-3;
};

struct CaseSpec {
  std::string scenario;       // scenario name
  std::string scenario_file;  // path it came from ("" when built in code)
  std::string model;          // "zoo:NAME?k=v" or an absolute ONNX path
  std::string model_hash;     // sha-256 hex of the model's serialized bytes
  std::string precision = "fp32";
  int64_t batch = 1;
  std::string fusion = "standard";
  int threads = 1;
  TimingConfig timing;
  AccuracyConfig accuracy;
  uint64_t seed = 1234;  // for the generated inputs

  // The configuration as JSON (stored with the case; every field above).
  nlohmann::json to_json() const;
  // The inverse of to_json(). Missing keys keep their defaults (so older stored configs
  // still load); a key of the wrong type is an fb::Error naming the field.
  static CaseSpec from_json(const nlohmann::json& j);
  // A stable key: a hash of the model's content and the normalized configuration that
  // affects the numbers (precision, batch, fusion, threads, seed). Scenario name, file and
  // timing settings are left out, so renaming a file or reordering a matrix keeps history.
  std::string case_key() const;
  // "bert b=8 fp32 standard t=2": how progress lines and reports name a case.
  std::string label() const;
};

// Summary statistics of one executor's samples, all in milliseconds.
struct SampleStats {
  size_t n = 0;
  double median = 0, p90 = 0, p99 = 0, mean = 0, stddev = 0, min = 0, max = 0;
  double ci_low = 0, ci_high = 0;  // 95% confidence interval of the median
};

struct Measurement {
  std::string executor;            // "engine" or "reference"
  std::vector<double> samples_ms;  // every timed iteration, in the order run
  SampleStats stats;
  double items_per_s = 0;          // batch / median seconds
  double first_iteration_ms = 0;   // the cold first run, kept apart from the samples
};

struct AccuracyResult {
  double max_abs_err = 0;
  double max_rel_err = 0;
  double cosine = 1;
  bool passed = true;
  std::string detail;  // which output failed and where, when it failed
};

struct LayerRecord {
  int index = 0;
  std::string name;
  std::string kind;                  // op type of the engine layer, e.g. "fusebench.FusedMatMul"
  std::vector<std::string> sources;  // source ONNX node names
};

struct CaseResult {
  CaseSpec spec;
  std::string status = "passed";  // "passed", "failed" (accuracy) or "error"
  std::string error;              // the message when status == "error"
  Measurement engine;
  Measurement reference;
  AccuracyResult accuracy;
  double speedup = 0;  // reference median / engine median
  std::string stop_reason;  // why timing stopped: "converged", "time-cap", "iteration-cap"
  double build_ms = 0;
  int onnx_nodes = 0;
  std::string build_log;
  std::vector<LayerRecord> layers;
};

}  // namespace fb
