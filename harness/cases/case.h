// A case is the unit of work: a self-contained specification in (CaseSpec) and a
// self-contained result out (CaseResult). Nothing between reaches for global state, so a
// case can run in-process or in a worker process (harness/run/worker_process.h), and its
// JSON form (harness/cases/case_json.h) can carry it to any other process.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/config/build_config.h"
#include "engine/runtime/profiler.h"
#include "harness/cases/case_status.h"
#include "harness/cases/gpu_environment.h"
#include "harness/cases/plugin_cost_result.h"
#include "harness/cases/plugin_settings.h"
#include "harness/load/load_figures.h"
#include "harness/load/load_settings.h"
#include "harness/stats/statistics.h"

namespace fb {

struct TimingConfig {
  double warmup_ms = 200;        // warm-up lasts at least this long...
  int warmup_iterations = 3;     // ...and at least this many iterations
  int min_iterations = 20;       // samples kept per executor, at least
  int max_iterations = 100000;   // and at most
  double max_seconds = 10;       // time cap for one executor's timed phase
  double target_rel_ci = 0.01;   // stop when the median's 95% CI half-width / median falls below
  // What target_rel_ci applies to: "median-ci" (each executor's median, by order
  // statistics) or "speedup-ci" (the speedup's bootstrap interval: stops as soon as the
  // ratio is known, even when each executor alone is noisier).
  std::string stop_rule = "median-ci";
  std::vector<int> pin_cpus{};   // pin every thread to these CPUs while timing; empty: no pinning
  // Test hooks, not benchmark settings: the engine busy-waits before every run, this long
  // (scripts/nightly_sim.sh), or this fraction of its own previous run's time (0.05: 5%
  // slower, whatever the machine's speed; what a regression of more work looks like, and
  // what selfcheck injects). Left out of the case key so the slowed-down case keeps its history.
  double inject_delay_us = 0;
  double inject_slowdown = 0;
  void clear_injection() { inject_delay_us = inject_slowdown = 0; }
  // Independent worker processes the case is timed in, one after another (fresh address
  // space, page placement and allocator state each): the spread between them is what a
  // re-run of the case would show, and what compare judges a change against. 1: timed in
  // the runner's own process, as before processes existed. The default, 10, with
  // process_samples 50, let compare see a 5% slowdown in 51 of 60 comparisons on a 2-core
  // VM, where 5 processes of about 15 samples saw 1 (docs/measurement.md, "Trusting a comparison").
  int processes = 10;
  // Samples of each executor every process takes before the stopping rule may end its
  // timing (max_seconds, spread over the processes, still ends it): a process's low
  // quantile is only as steady as the samples under it.
  int process_samples = 50;
  // A paired run (run --against) times more pairs than `processes`, up to max_pairs, while
  // its pairs' noise would hide a speedup change of paired_detectable (compare's default
  // min effect): a case whose processes spread widely needs many pairs to see 5% (a zoo
  // ResNet at batch 4, unfused: 5.8% between processes, 10 pairs see 7.7% at best), while a
  // quiet one stops at `processes`.
  int max_pairs = 20;
  double paired_detectable = 0.03;
  // How engine and reference take turns while timed: "iteration" (engine, reference,
  // engine, ...) or "block" (block_iterations of one, then block_iterations of the other),
  // so each executor runs with its own weights in cache, as a standalone loop would.
  std::string alternation = "iteration";
  int block_iterations = 10;
  // When a worker process counts as disturbed (harness/measure/interference.h): the case's threads
  // exceed the cores other processes left free by more than disturbance_cpus, or the
  // hypervisor took more than disturbance_steal of the CPUs (steal time). A disturbed process
  // is timed again, up to disturbance_retries times; a case with one still disturbed after
  // that is stored flagged. Defaults measured in docs/measurement.md ("Disturbance").
  double disturbance_cpus = 0.25;
  double disturbance_steal = 0.05;
  int disturbance_retries = 2;
  // A GPU case's samples: the device's own time for the layers (CUDA events, trtexec's
  // "GPU Compute Time"), plus the copies in and out when this is true (its "Host Latency").
  bool include_copies = false;

  bool operator==(const TimingConfig&) const = default;
};

// The scenario's "gate" block, stored with each case so `fusebench gate` can judge a run
// without the scenario file. Unset rules are not checked.
struct GateConfig {
  std::optional<double> min_speedup;     // speedup over the reference, at least
  // At most this much slower than the baseline (0.05 = 5%), judged as compare judges
  // (harness/judge/compare.h): the speedup beyond the case's noise, cross-checked by engine time.
  std::optional<double> max_regression;
  std::optional<double> max_abs_err;     // accuracy: largest |engine - reference|, at most
  // Load cases (harness/load/load_settings.h): the share of the case's load runs that are valid
  // (a peak search: whether it found a valid rate), at least; and the percentile it claims
  // (early stopping's estimate, ms), at most: too few queries to claim one fails.
  std::optional<double> min_valid_rate{};
  std::optional<double> max_claimed_ms{};

  bool operator==(const GateConfig&) const = default;
};

// Where fusion must stop (scenario "fusion_limits"; see BuildConfig).
struct FusionLimits {
  std::vector<std::string> exclude_nodes;     // node-name globs
  std::vector<std::string> exclude_ops;  // op types fusion leaves alone (--exclude-op; BuildConfig::exclude_op_types)
  std::vector<std::string> partition_points;  // tensor names
  bool empty() const { return exclude_nodes.empty() && exclude_ops.empty() && partition_points.empty(); }
  bool operator==(const FusionLimits&) const = default;
};

// How close the engine's outputs must be to the fp32 reference. Elementwise: every float
// element within atol + rtol·|reference| (numpy's allclose); cosine: the cosine similarity
// over all float outputs at least min_cosine. Reduced precisions are judged by cosine by
// default (accuracy.h: default_accuracy), since bf16 rounds every value to 8 bits of mantissa.
struct AccuracyConfig {
  double atol = 1e-4;
  double rtol = 1e-3;
  bool elementwise = true;            // false: atol/rtol are not checked
  std::optional<double> min_cosine{};   // unset: cosine is not checked

  bool operator==(const AccuracyConfig&) const = default;
};

// Per-layer precision constraints (scenario "precision_constraints", flags
// --layer-precision and --precision-mode); see BuildConfig.
struct PrecisionConstraints {
  std::string mode = "prefer";  // "obey" or "prefer"
  std::vector<LayerPrecision> layers;
  bool empty() const { return layers.empty(); }
  bool operator==(const PrecisionConstraints&) const = default;
};

struct CaseSpec {
  std::string scenario;       // scenario name
  std::string scenario_file;  // path it came from ("" when built in code)
  std::string model;          // "zoo:NAME?k=v" or an absolute ONNX path
  std::string model_hash;     // sha-256 hex of the model's serialized bytes
  Precision precision = Precision::FP32;  // named only where it is read and written (case_fields.cpp)
  int64_t batch = 1;
  FusionLevel fusion = FusionLevel::Standard;
  int threads = 1;
  // Where both executors run: "cpu", "cuda" (device 0) or "cuda:N" (BuildConfig::device).
  std::string device = "cpu";
  // "static": an engine built for this batch; "dynamic": one built for the range
  // dynamic_batch (engine/builder/dynamic_engine.h), timed at this batch.
  std::string engine_shapes = "static";
  BatchRange dynamic_batch{};  // set for dynamic cases only
  bool dynamic() const { return engine_shapes == "dynamic"; }
  // Whether the engine may run float32 3x3 convolutions on Winograd kernels
  // (BuildConfig::winograd); false keeps every convolution direct.
  bool winograd = true;
  // Whether a device engine replays its plan as one CUDA graph (BuildConfig::cuda_graph).
  bool cuda_graph = false;
  TimingConfig timing;
  AccuracyConfig accuracy;
  GateConfig gate;
  FusionLimits fusion_limits;
  PrecisionConstraints precision_constraints;
  Int8Calibration calibration{};  // how an int8 case finds its thresholds (engine/config/build_config.h)
  uint64_t seed = 1234;  // for the generated inputs
  // Shape inputs (TensorRT's shape tensors): graph inputs that feed shapes (Reshape's
  // shape, TopK's K...), each bound at build time to the value given, as written in the
  // scenario (a number or a list of numbers: integers make int64, any fraction float32).
  // Both executors run on that value.
  std::map<std::string, nlohmann::json> shape_inputs{};
  PluginSettings plugins;  // plugin libraries and placements (harness/cases/plugin_settings.h)
  // Profiled runs of the engine after timing (scenario "profile": {"iterations": N}): the
  // per-layer profile `fusebench profile` takes, stored with the case so `explain` can say
  // which layers a change moved; 0: none. Not in the case key: it runs after the timing.
  int profile_iterations = 0;
  // LoadGen's scenarios (harness/load/load_settings.h): single-stream, the default, is the
  // side-by-side timing above; the others serve the engine from a pool of instances.
  LoadSettings load{};

  // The configuration as JSON (stored with the case; every field above). The settings'
  // keys and checks are the case table's (harness/cases/case_fields.h).
  nlohmann::json to_json() const;
  // The inverse of to_json(). Missing keys keep their defaults (so older stored configs
  // still load); a value a scenario could not hold is an fb::Error naming the field.
  static CaseSpec from_json(const nlohmann::json& j);
  bool operator==(const CaseSpec&) const = default;

  // A stable key: a hash of the model's content and the normalized configuration that
  // affects the numbers (key_json). Scenario name, file and timing settings are left out,
  // so renaming a file or reordering a matrix keeps history.
  std::string case_key() const;
  // The settings the key hashes, as canonical JSON text: precision and its constraints,
  // batch, fusion and its limits, threads, seed, plugins (harness/cases/case_fields.h: in_key).
  std::string key_json() const;
  // What the cases of one batch curve (speedup against batch) share: the model and every
  // setting of the key but the curve's axis, the batch (CaseField::curve_axis).
  std::string curve_key() const;
  // "bert b=8 fp32 standard t=2": how progress lines and reports name a case.
  std::string label() const;
  // What label() adds after the threads: the engine's shapes, Winograd, CUDA graph,
  // device, plugins and load (" dynamic[1..16] cuda-graph cuda"; "" for a plain case).
  std::string variant_label() const;
  // What label() adds for a dynamic engine: " dynamic[1..16]" ("" for a static one).
  std::string shapes_label() const;

 private:
  static CaseSpec from_json_fields(const nlohmann::json& j);
};

// Page faults during one timed iteration (getrusage of the whole process, so the faults of
// the executor's worker threads count too).
struct FaultStats {
  int64_t min = 0, max = 0;
  double mean = 0;

  bool operator==(const FaultStats&) const = default;
};

struct Measurement {
  std::string executor;            // "engine" or "reference"
  std::vector<double> samples_ms;  // every timed iteration, in the order run
  // The worker process (0-based) each sample came from, parallel to samples_ms; empty when
  // all came from one process (and in results stored before processes existed).
  std::vector<int> sample_process;
  SampleStats stats;
  double items_per_s = 0;          // batch / median seconds
  double first_iteration_ms = 0;   // the cold first run, kept apart from the samples
  FaultStats minor_faults;         // per timed iteration: pages mapped without I/O
  FaultStats major_faults;         // per timed iteration: pages read from disk

  bool operator==(const Measurement&) const = default;
};

// How far a case's figures moved between its worker processes: the spread a re-run would
// show. Each is the robust relative spread (robust_log_spread, 0.02 = 2%) of the
// per-process figures compare judges (process_floors): engine and reference times, and the
// speedup (each process's own ratio). NaN with fewer than two processes, where nothing
// says how a re-run moves.
struct ProcessNoise {
  int processes = 1;
  double engine = std::numeric_limits<double>::quiet_NaN();
  double reference = std::numeric_limits<double>::quiet_NaN();
  double speedup = std::numeric_limits<double>::quiet_NaN();

  bool operator==(const ProcessNoise&) const = default;
};

// Signs that something else disturbed the timing, measured around the timed phase.
// NaN where the machine does not say (no /proc, no cpufreq).
struct Interference {
  double load_before = 0, load_after = 0;  // 1-minute load average
  double other_cpu_ms = 0;   // CPU time all other processes used meanwhile (/proc/stat minus our rusage)
  double timed_wall_ms = 0;  // wall time of the timed phase, to put other_cpu_ms in proportion
  double cpu_mhz_before = 0, cpu_mhz_after = 0;  // mean current frequency over the CPUs
  double steal_ms = 0;       // CPU time the hypervisor gave other guests meanwhile, over all CPUs (/proc/stat)
  int run_queue = 0;         // the most runnable tasks seen at the start or the end, ours included (procs_running)
  int64_t involuntary_switches = 0;  // times this process's threads were preempted meanwhile (getrusage)

  bool operator==(const Interference&) const = default;
};

struct AccuracyResult {
  double max_abs_err = 0;
  double max_rel_err = 0;
  double cosine = 1;
  bool passed = true;
  std::string detail;  // which output failed and where, when it failed

  bool operator==(const AccuracyResult&) const = default;
};

// An engine layer as stored with its case: every field of the engine's LayerInfo.
struct LayerRecord {
  int index = 0;
  std::string name;
  std::string kind;                  // op type of the engine layer, e.g. "fusebench.FusedMatMul"
  std::vector<std::string> sources;  // source ONNX node names
  std::string kernel{};              // what runs it ("onednn.matmul+bias+gelu", "view")
  std::string precision{};            // what it ran in: fp32, bf16, fp16
  std::vector<std::vector<int64_t>> input_shapes{}, output_shapes{};
  double flops = 0;  // per run (0: not counted; NaN: not stored, in databases before version 4)
  double bytes = 0;  // read and written per run
  std::string precision_reason{};  // why: default, constraint 'PATTERN', fallback from ...: why, view of its input

  bool operator==(const LayerRecord&) const = default;
};

// What a fusion pass did with one match (the engine's FusionEvent, as stored with a case):
// fused it into `fused`, or refused it and why.
struct FusionDecision {
  std::string pass;                // "attention-fusion"
  std::string root;                // the node the rule matched at
  std::vector<std::string> nodes;  // the matched nodes
  std::string fused;               // the node that replaced them ("" when refused)
  std::string refused;             // why it was refused ("" when fused)

  bool operator==(const FusionDecision&) const = default;
};

// The machine a case was built and timed on: a distributed run spreads its cases over
// several, and numbers from different machines must not be mixed unknowingly.
struct HostFingerprint {
  std::string host;
  std::string cpu_model;
  std::string cpu_flags;
  int cores = 0;

  bool operator==(const HostFingerprint&) const = default;
};

struct CaseResult {
  CaseSpec spec;
  CaseStatus status = CaseStatus::kPassed;
  std::string error;  // the message when status is kError
  Measurement engine;
  Measurement reference;
  AccuracyResult accuracy;
  double speedup = 0;  // reference median / engine median
  double speedup_ci_low = 0, speedup_ci_high = 0;  // its 95% seeded bootstrap interval
  std::string stop_reason;  // why timing stopped: "converged", "time-cap", "iteration-cap"
  // The stopping rule's target was not met when timing stopped (then stop_reason names the
  // cap that ended it; converged otherwise): the numbers are there, but a verdict resting on
  // them is inconclusive.
  bool noisy = false;
  // Why the machine disturbed the timing ("" when it did not): a worker process still
  // disturbed after timing.disturbance_retries re-timings (harness/measure/interference.h says
  // when), named with what was seen. The numbers are kept, flagged wherever they are shown.
  std::string disturbed;
  int retimed_processes = 0;  // worker processes timed again because they were disturbed
  double timer_overhead_ns = 0;  // one clock read pair plus the call, measured before timing
  Interference interference;
  // A GPU case's device environment around its timing (NVML); unset for a CPU case.
  std::optional<GpuEnvironment> gpu;
  ProcessNoise process_noise;    // spread between the worker processes (timing.processes)
  std::string pinned_cpus;       // "0,1" when timing ran pinned, else ""
  HostFingerprint timed_on;
  // How timing was kept apart from other work on its host, which changes the numbers.
  // "single-process" (one fusebench run), or under mpirun (harness/run/mpi_run.h)
  // "host-exclusive" (one timing rank per host) or "cores-per-worker=K".
  std::string isolation = "single-process";
  // No result: the worker running the case died or hung (status "error", the reason in
  // `error`). `fusebench run --resume` runs such a case again.
  bool worker_lost = false;
  double build_ms = 0;
  // A dynamic engine's first run at a shape other than the one it was built for: the
  // build of that shape's specialization, in ms (unset for a static engine).
  std::optional<double> specialize_ms;
  int64_t engine_memory_bytes = 0;     // the engine's activation arena (a dynamic engine's: of the specializations it keeps)
  int64_t reference_memory_bytes = 0;  // the reference executor's peak of live activations
  int onnx_nodes = 0;
  std::string build_log;
  std::vector<LayerRecord> layers;
  // Every fusion and refusal of the build, in the order the passes made them.
  std::vector<FusionDecision> fusion_decisions;
  // With profile_iterations: the engine's per-layer profile, taken after the timing in the
  // first worker process; its layers are parallel to `layers` (the same build).
  std::optional<Profile> profile;
  // What the profile cost the run: the wall time of the unfused build and the profiled runs.
  double profile_wall_ms = 0;
  // With plugin placements (and plugins.cost): the same case without them, and the split.
  std::optional<PluginCost> plugin_cost;
  // A load case's runs (every sample's times) and figures; unset for single-stream.
  std::optional<LoadResult> load;

  // Exact equality (NaN fields compare unequal, as doubles do).
  bool operator==(const CaseResult&) const = default;
};

}  // namespace fb
