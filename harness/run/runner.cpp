#include "harness/cases/calibration.h"
#include "harness/run/runner.h"

#include <chrono>
#include <tuple>

#include "engine/builder/builder.h"
#include "engine/builder/dynamic_engine.h"
#include "engine/builder/static_shapes.h"
#include "engine/ir/error.h"
#include "engine/reference/device_reference.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "harness/cases/accuracy.h"
#include "harness/cases/case_fields.h"
#include "harness/cases/case_profile.h"
#include "harness/cases/inputs.h"
#include "harness/cases/plugin_model.h"
#include "harness/judge/compare.h"
#include "harness/measure/environment.h"
#include "harness/measure/gpu_disturbance.h"
#include "harness/measure/gpu_monitor.h"
#include "harness/measure/interference.h"
#include "harness/measure/load_case.h"
#include "harness/measure/plugin_cost.h"
#include "harness/measure/process_merge.h"
#include "harness/run/mpi_run.h"
#include "harness/run/worker_process.h"

namespace fb {

const LoadedModel& CaseRunner::model(const std::string& reference) {
  auto it = models_.find(reference);
  if (it == models_.end()) it = models_.emplace(reference, std::make_unique<LoadedModel>(load_model(reference))).first;
  return *it->second;
}

namespace {
// Worker processes a case is timed in: timing.processes, but never more than max_iterations,
// the case's cap on samples (every process takes at least one).
int worker_count(const TimingConfig& t) { return std::min(t.processes, t.max_iterations); }

// How often a disturbed worker process is timed again: never where the case has more
// threads than the machine has cores (another try cannot help).
int disturbance_retries(const CaseSpec& spec, const CaseResult& part) {
  const int cores = part.timed_on.cores;
  return cores > 0 && spec.threads > cores ? 0 : spec.timing.disturbance_retries;
}

// The merged result of a case's processes, under the spec as asked (not the per-process
// share of its timing), with the processes it got and the model hash a worker read.
CaseResult merged_as_asked(const std::vector<CaseResult>& parts, const CaseSpec& asked, int retimed) {
  CaseResult r = merge_process_results(parts);
  const std::string model_hash = r.spec.model_hash;
  r.spec = asked;
  r.spec.timing.processes = static_cast<int>(parts.size());
  r.spec.model_hash = model_hash.empty() ? asked.model_hash : model_hash;
  r.retimed_processes = retimed;
  return r;
}
}  // namespace

CaseResult CaseRunner::run(const CaseSpec& spec, const ProgressFn& progress) {
  // A load case is one run of a pool (or a peak search), served in this process.
  if (!spec.load.is_default()) return run_here(spec, progress);
  return worker_count(spec.timing) > 1 ? run_in_workers(spec, progress) : run_here(spec, progress);
}

CaseResult CaseRunner::run_in_workers(const CaseSpec& spec, const ProgressFn& progress) {
  const int k = worker_count(spec.timing);
  CaseSpec worker_spec = spec;
  worker_spec.timing.processes = k;
  worker_spec.timing = per_process_timing(worker_spec.timing);
  std::vector<CaseResult> parts;
  int retimed = 0;
  for (int p = 0; p < k; ++p) {
    const std::string of_k = "process " + std::to_string(p + 1) + "/" + std::to_string(k);
    if (progress) progress(of_k);
    // The plugin cost analysis (its own interleaved timing) runs in process 0 only; the
    // merged result takes it from there.
    CaseSpec process_spec = worker_spec;
    if (p > 0) process_spec.plugins.cost = false;
    if (p > 0) process_spec.profile_iterations = 0;  // the profile too: one pass is the case's
    // A process the machine disturbed is timed again, a few times at most: a burst of
    // other work passes, a machine that stays busy keeps the flag (and one with fewer cores
    // than the case has threads is not asked again).
    CaseResult part = run_in_worker_process(process_spec, p, worker_executable_);
    for (int retry = 0; retry < disturbance_retries(spec, part) && part.status != CaseStatus::kError && !part.disturbed.empty();
         ++retry) {
      ++retimed;
      if (progress) progress(of_k + " timed again, disturbed: " + part.disturbed);
      part = run_in_worker_process(process_spec, p, worker_executable_);
    }
    parts.push_back(std::move(part));
    if (parts.back().status == CaseStatus::kError) break;  // the case is an error; the other processes would not change that
  }
  return merged_as_asked(parts, spec, retimed);
}

std::pair<CaseResult, CaseResult> CaseRunner::run_paired(const CaseSpec& spec, const std::string& other,
                                                         const ProgressFn& progress) {
  const int k = std::max(2, worker_count(spec.timing));  // pairs: at least two, or nothing judges them
  CaseSpec worker_spec = spec;
  worker_spec.timing.processes = k;
  worker_spec.timing = per_process_timing(worker_spec.timing);
  worker_spec.plugins.cost = false;  // the cost split is a run's own analysis, not a side of a pair
  worker_spec.profile_iterations = 0;  // so is the profile (run it without --against)
  CaseSpec baseline_spec = worker_spec;
  baseline_spec.timing.clear_injection();
  std::vector<CaseResult> candidate, baseline;
  int retimed = 0;
  CaseSpec asked_baseline = spec;
  asked_baseline.timing.clear_injection();
  // Past the asked pairs: another while the pairs so far could not see paired_detectable
  // (judged as compare judges a paired run: the speedup's pairs).
  auto pairs_hide_the_change = [&] {
    if (int(candidate.size()) >= std::max(k, spec.timing.max_pairs)) return false;
    CompareOptions o;
    o.min_effect = spec.timing.paired_detectable;
    const FigureChange s = judge_paired_figure(judged_figures(merged_as_asked(baseline, asked_baseline, retimed)).speedup,
                                               judged_figures(merged_as_asked(candidate, spec, retimed)).speedup, true, o);
    return !(s.detectable <= o.min_effect);
  };
  for (int p = 0; p < k || pairs_hide_the_change(); ++p) {
    const std::string of_k = "pair " + std::to_string(p + 1) + "/" + std::to_string(p < k ? k : spec.timing.max_pairs);
    if (progress) progress(of_k);
    // ABBA: A B, B A, A B, ... so neither side is always first after the other.
    auto time_pair = [&] {
      std::pair<CaseResult, CaseResult> ab;
      if (p % 2 == 0) {
        ab.first = run_in_worker_process(worker_spec, p, worker_executable_);
        ab.second = run_in_worker_process(baseline_spec, p, other);
      } else {
        ab.second = run_in_worker_process(baseline_spec, p, other);
        ab.first = run_in_worker_process(worker_spec, p, worker_executable_);
      }
      return ab;
    };
    auto [a, b] = time_pair();
    for (int retry = 0; retry < disturbance_retries(spec, a) && a.status != CaseStatus::kError && b.status != CaseStatus::kError &&
                        (!a.disturbed.empty() || !b.disturbed.empty());
         ++retry) {
      ++retimed;
      if (progress) progress(of_k + " timed again, disturbed: " + (a.disturbed.empty() ? b.disturbed : a.disturbed));
      std::tie(a, b) = time_pair();
    }
    candidate.push_back(std::move(a));
    baseline.push_back(std::move(b));
    if (candidate.back().status == CaseStatus::kError || baseline.back().status == CaseStatus::kError) break;
  }
  std::pair<CaseResult, CaseResult> sides{merged_as_asked(candidate, spec, retimed),
                                          merged_as_asked(baseline, asked_baseline, retimed)};
  sides.second.spec.model_hash = sides.first.spec.model_hash;  // one case key, whatever the other build hashes
  return sides;
}

CaseResult CaseRunner::run_here(const CaseSpec& spec_in, const ProgressFn& progress) {
  CaseResult r;
  r.spec = spec_in;
  if (!host_) host_ = host_fingerprint(capture_environment());
  r.timed_on = *host_;
  try {
    const LoadedModel& m = model(spec_in.model);
    r.spec.model_hash = m.hash;
    r.onnx_nodes = int(m.onnx_nodes);
    BuildConfig cfg = build_config_of(r.spec);
    cfg.device = device_for_this_rank(cfg.device);  // under mpirun: the rank's own GPU
    const bool on_device = r.spec.device != "cpu";
    // The GPU's setup and state through NVML, read around the timing (gpu_monitor.h).
    std::unique_ptr<GpuMonitor> gpu_monitor;
    if (on_device) {
      // No GPU: say so (no driver, no device, busy) before building.
      const DeviceDescription device = backend_named(cfg.device)->describe_device();
      if (cfg.is_dynamic()) throw Error("a dynamic engine on " + r.spec.device + " is not run yet: use a static case");
      gpu_monitor = std::make_unique<GpuMonitor>(device);
    }

    // Plugins: the libraries' ops join this case's registry; placements edit the model
    // both executors run (the model without them is the cost analysis' baseline).
    const PluginSettings& plugins = r.spec.plugins;
    const PluginModel pm = apply_plugins(m, plugins);
    const Graph& graph = pm.graph();
    const std::shared_ptr<const OpRegistry>& ops = pm.ops;

    ThreadScope threads(r.spec.threads);
    const auto t0 = std::chrono::steady_clock::now();
    // Static: one engine, built (int8: after calibration) or loaded from a plan. Dynamic:
    // an engine for the batch range, built for its opt batch; `engine` is then the
    // specialization for this case's batch, and the timed runs go through the dynamic one.
    std::unique_ptr<Engine> owned;
    std::unique_ptr<DynamicEngine> dynamic;
    threads.run([&] {
      naming_model(m, [&] { calibrate_for_int8(m, graph, cfg, ops); });
      if (!cfg.is_dynamic()) {
        owned = plugins.empty() ? make_engine(m, cfg) : build_engine(graph, cfg, {ops});
        return;
      }
      if (m.plan) throw Error(spec_in.model + ": a plan holds a static engine; a dynamic case needs the ONNX model");
      dynamic = std::make_unique<DynamicEngine>(graph, cfg, EngineKernels{ops});
    });
    r.build_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    ReferenceExecutor reference(graph, r.spec.batch, {}, ops);
    // Shape inputs take their bound values; the engine, which holds them as constants,
    // runs on the others.
    std::vector<Tensor> inputs = make_inputs(graph, reference.input_shapes(), r.spec.seed);
    for (size_t k = 0; k < graph.inputs.size(); ++k)
      if (auto bound = cfg.constant_inputs.find(graph.inputs[k].name); bound != cfg.constant_inputs.end())
        inputs[k] = as_declared(graph.inputs[k], bound->second);
    const std::vector<Tensor> engine_inputs = unbound_inputs(graph, inputs, cfg.constant_inputs);
    Engine* engine = owned.get();
    if (dynamic) {
      const BatchRange& b = r.spec.dynamic_batch;
      threads.run([&] {
        // What a first run at a new shape costs: this case's batch, or where that is the
        // one the engine was built for, the range's other end.
        const int64_t other = r.spec.batch != b.opt ? r.spec.batch : b.min != b.opt ? b.min : b.max;
        if (other != b.opt) {
          dynamic->engine_for(dynamic->shapes_at_batch(other));
          r.specialize_ms = dynamic->last_specialization_ms();
        }
        std::vector<Shape> shapes;
        for (const Tensor& t : engine_inputs) shapes.push_back(t.shape());
        engine = &dynamic->engine_for(shapes);
      });
    }
    r.engine_memory_bytes = static_cast<int64_t>(dynamic ? dynamic->arena_bytes() : engine->arena_bytes());
    for (const std::string& line : pm.log) r.build_log += line + "\n";
    for (const std::string& line : dynamic ? dynamic->build_log() : engine->build_log()) r.build_log += line + "\n";
    for (size_t i = 0; i < engine->layers().size(); ++i) {
      const LayerInfo& l = engine->layers()[i];
      r.layers.push_back(LayerRecord{int(i), l.name, l.kind, l.sources, l.kernel, precision_name(l.precision), l.input_shapes,
                                     l.output_shapes, l.flops, l.bytes, l.precision_reason});
    }
    r.fusion_decisions = fusion_decisions_of(*engine);
    const bool copies = r.spec.timing.include_copies;
    auto run_engine = [&] {
      dynamic ? dynamic->run(engine_inputs) : engine->run(engine_inputs);
      if (copies && on_device) engine->outputs();
    };
    // On a GPU the reference runs there too (gpu_reference.h); the CPU's eager reference
    // still computes the expected outputs both are checked against.
    std::unique_ptr<Engine> device_reference = on_device ? build_device_reference(graph, cfg, ops) : nullptr;
    std::function<void()> run_reference = [&] { reference.run(inputs); };
    if (device_reference)
      run_reference = [&] {
        device_reference->run(engine_inputs);
        if (copies) device_reference->outputs();
      };
    DeviceClocks clocks;
    if (on_device) {
      clocks.engine = [&] { return device_ms(*engine, copies); };
      clocks.reference = [&] { return device_ms(*device_reference, copies); };
      watch_gpu(*gpu_monitor, r.gpu.emplace(), clocks);
    }

    threads.run([&] {
      const std::vector<Tensor> expected = reference.run(inputs);
      r.reference_memory_bytes = static_cast<int64_t>(reference.peak_activation_bytes());
      run_engine();
      r.accuracy = compare_outputs(dynamic ? dynamic->outputs() : engine->outputs(), expected, graph.outputs, r.spec.accuracy);
      if (device_reference) {
        device_reference->run(engine_inputs);
        r.reference_memory_bytes = static_cast<int64_t>(device_reference->arena_bytes());
        const AccuracyResult gpu = compare_outputs(device_reference->outputs(), expected, graph.outputs, device_reference_agreement());
        if (!gpu.passed)
          throw Error("the " + r.spec.device + " reference disagrees with the CPU reference beyond fp32 agreement (harness/cases/accuracy.h): " +
                      gpu.detail);
      }
      if (!r.spec.load.is_default()) {
        if (dynamic) throw Error("a load case needs a static engine");
        r.load = serve_load(*engine, engine_inputs, r.spec, progress);
        load_measurement(*r.load, r);
        return;
      }
      SideBySide timed = time_side_by_side(run_engine, run_reference, r.spec.timing, r.spec.batch, progress,
                                           on_device ? &clocks : nullptr);
      store_timing(std::move(timed), r);
      const int cores = r.pinned_cpus.empty() ? r.timed_on.cores : int(r.spec.timing.pin_cpus.size());
      r.disturbed = disturbance_of(r.interference, r.spec.threads, cores, r.spec.timing);
      if (r.gpu) r.disturbed = join_disturbances(r.disturbed, gpu_disturbance_of(*r.gpu));
      if (!plugins.placements.empty() && plugins.cost) {
        if (progress) progress("plugin cost: timing the model without its plugins");
        std::unique_ptr<Engine> baseline = build_engine(m.graph, dynamic ? engine->config() : cfg, {ops});
        r.plugin_cost = measure_plugin_cost(*engine, *baseline, engine_inputs, r.spec.timing);
      }
      if (r.spec.profile_iterations > 0) {
        if (progress) progress("profiling each layer");
        const auto p0 = std::chrono::steady_clock::now();
        r.profile = profile_case(*engine, graph, dynamic ? engine->config() : cfg, {ops}, engine_inputs,
                                 r.spec.profile_iterations, r.engine.stats.median);
        r.profile_wall_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - p0).count();
      }
    });
    r.speedup = r.engine.stats.median > 0 ? r.reference.stats.median / r.engine.stats.median : 0;
    r.status = r.accuracy.passed ? CaseStatus::kPassed : CaseStatus::kFailed;
  } catch (const std::exception& e) {
    r.status = CaseStatus::kError;
    r.error = e.what();
  }
  return r;
}

}  // namespace fb
