// fusebench profile: per-layer time through fusion, the top layers against the machine's
// measured peaks, and the time rolled up by module path.
#include <cstdio>

#include "engine/builder/builder.h"
#include "engine/plan/build_config_json.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/profiler.h"
#include "engine/runtime/thread_scope.h"
#include "harness/cases/calibration.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"
#include "harness/cases/plugin_model.h"
#include "harness/cli/batch_label.h"
#include "harness/cli/commands.h"
#include "harness/cli/plan_options.h"
#include "harness/cli/shape_profile_options.h"
#include "harness/judge/batch_scaling.h"
#include "harness/measure/environment.h"
#include "harness/measure/plugin_cost.h"
#include "harness/measure/plugin_cost_text.h"
#include "harness/store/result_store.h"

namespace fb::cli {

namespace {

// "1,8,32": positive and ascending; Error naming the flag otherwise.
std::vector<int64_t> batch_list(const std::string& text) {
  std::vector<int64_t> batches;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t comma = std::min(text.find(',', at), text.size());
    const std::string item = text.substr(at, comma - at);
    size_t used = 0;
    int64_t b = 0;
    try {
      b = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (item.empty() || used != item.size() || b < 1) throw Error("--batch-sweep: '" + item + "' is not a positive batch");
    if (!batches.empty() && b <= batches.back()) throw Error("--batch-sweep: batches must ascend ('" + text + "')");
    batches.push_back(b);
    at = comma + 1;
  }
  if (batches.size() < 2) throw Error("--batch-sweep: give at least two batches, as 1,8");
  return batches;
}

}  // namespace

int cmd_profile(int argc, char** argv) {
  cxxopts::Options opts("fusebench profile", "Per-layer and per-module time of a built engine, seen through fusion.");
  add_build_options(opts, "aggressive");
  add_shape_profile_options(opts);
  add_plugin_options(opts);
  opts.add_options()("threads", "threads", cxxopts::value<int>()->default_value("1"))(
      "iterations", "profiled runs (per-layer medians)", cxxopts::value<int>()->default_value("50"))(
      "top", "layers to list", cxxopts::value<int>()->default_value("15"))(
      "depth", "module levels to show (0: all)", cxxopts::value<int>()->default_value("0"))(
      "db", "results database: store the profile there and reuse its cached machine peaks", cxxopts::value<std::string>())(
      "batch-sweep", "B1,B2,...: profile at each batch and say what limits each layer as the batch grows",
      cxxopts::value<std::string>());
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("model")) throw Error("a MODEL argument is required");
  const int iterations = args["iterations"].as<int>();

  LoadedModel m = load_model(args["model"].as<std::string>());
  BuildConfig cfg = build_config_for(args, m);
  cfg.shape_profile = shape_profile_from(args);
  if (args.count("threads") || !m.plan) cfg.threads = args["threads"].as<int>();
  BuildConfig used;  // the static config of the engine profiled, set once calibrated
  std::vector<std::string> profile_lines;  // a dynamic engine's optimization profile
  const PluginSettings plugins = plugin_settings_from(args);
  const PluginModel pm = apply_plugins(m, plugins);
  std::optional<PluginCost> cost;
  ThreadScope threads(cfg.threads);
  Profile p;
  // Peaks are measured once per host, CPU and thread count (a GPU's: per host and GPU, on
  // its own clock), and cached in the store.
  std::unique_ptr<ResultStore> store;
  if (args.count("db")) store = std::make_unique<ResultStore>(args["db"].as<std::string>());
  const RunInfo env = capture_environment();
  const std::shared_ptr<const Backend> backend = backend_named(cfg.device);
  const bool on_cpu = backend->device() == Device::Host;
  const std::string processor = on_cpu ? env.cpu_model : backend->device_identity();
  const int peak_threads = on_cpu ? cfg.threads : 0;
  std::optional<MachinePeaks> cached = store ? store->cached_peaks(env.host, processor, peak_threads) : std::nullopt;
  MachinePeaks peaks;
  if (cached) peaks = *cached;
  else threads.run([&] { peaks = backend->measure_peaks(cfg.threads).value_or(MachinePeaks{}); });
  if (store && !cached) store->store_peaks(env.host, processor, peak_threads, peaks);
  if (args.count("batch-sweep")) {
    const std::vector<int64_t> batches = batch_list(args["batch-sweep"].as<std::string>());
    if (!plugins.empty() || cfg.is_dynamic()) throw Error("--batch-sweep profiles static engines without plugins");
    for (const GraphInput& in : pm.graph().inputs)
      if (!in.dims.empty() && in.dims[0] > 0)
        throw Error("--batch-sweep: the model fixes input '" + in.name + "' at batch " + std::to_string(in.dims[0]));
    std::vector<Profile> profiles;
    std::vector<double> unfused_ms;
    threads.run([&] {
      for (int64_t b : batches) {
        BuildConfig c = cfg;
        c.batch = b;
        naming_model(m, [&] { calibrate_for_int8(m, pm.graph(), c, pm.ops); });
        std::unique_ptr<Engine> engine = build_engine(pm.graph(), c, {pm.ops});
        BuildConfig none = c;
        none.fusion = FusionLevel::None;
        std::unique_ptr<Engine> unfused = build_engine(pm.graph(), none, {pm.ops});
        ReferenceExecutor ref(pm.graph(), b, {}, pm.ops);
        const std::vector<Tensor> inputs =
            unbound_inputs(pm.graph(), make_inputs(pm.graph(), ref.input_shapes(), 1234), engine->config().constant_inputs);
        profiles.push_back(profile_engine(*engine, unfused.get(), inputs, iterations));
        unfused_ms.push_back(profile_engine(*unfused, nullptr, inputs, iterations).total_ms);
      }
    });
    std::printf("%s  %s on %s, %d thread(s), batches", m.reference.c_str(), fusion_level_name(cfg.fusion), cfg.device.c_str(),
                cfg.threads);
    for (int64_t b : batches) std::printf(" %lld", (long long)b);
    std::printf(" (sums of layer medians over %d runs each)\n%s peaks (%s): %.1f GFLOP/s fp32, %.1f GB/s\n\n", iterations,
                on_cpu ? "machine" : processor.c_str(), cached ? "cached in the store" : "measured", peaks.gflops, peaks.gbps);
    std::printf("%s", format_batch_scaling(analyze_batch_scaling(batches, profiles, unfused_ms, peaks), args["top"].as<int>()).c_str());
    return kExitOk;
  }
  threads.run([&] {
    naming_model(m, [&] { calibrate_for_int8(m, pm.graph(), cfg, pm.ops); });
    used = cfg;  // with the int8 ranges: the unfused and baseline engines need them too
    // A dynamic engine (an optimization profile) is profiled at its opt shapes.
    const InspectedEngine built = build_for_inspection(m, pm, !plugins.empty(), cfg);
    Engine* engine = built.engine;
    if (built.dynamic) {
      used = built.dynamic->specialized_config(built.dynamic->opt_shapes());
      for (const std::string& line : built.build_log)
        if (line.rfind("optimization profile: ", 0) == 0) profile_lines.push_back(line);
    }
    std::unique_ptr<Engine> unfused;
    const bool fused = cfg.fusion == FusionLevel::Standard || cfg.fusion == FusionLevel::Aggressive;
    if (fused) {
      BuildConfig none = used;
      none.fusion = FusionLevel::None;
      unfused = build_engine(pm.graph(), none, {pm.ops});
    }
    // The engine's inputs: those it bound at build time (shape inputs) are its constants.
    std::vector<Tensor> inputs;
    if (built.dynamic) {
      inputs = make_inputs(engine->graph(), built.dynamic->opt_shapes(), 1234);
    } else {
      ReferenceExecutor ref(pm.graph(), cfg.batch, {}, pm.ops);
      inputs = unbound_inputs(pm.graph(), make_inputs(pm.graph(), ref.input_shapes(), 1234), engine->config().constant_inputs);
    }
    p = profile_engine(*engine, unfused.get(), inputs, iterations);
    // With plugins placed: what they cost against the same model without them.
    if (!plugins.placements.empty()) {
      auto baseline = build_engine(m.graph, used, {pm.ops});
      TimingConfig timing;
      timing.min_iterations = iterations;
      cost = measure_plugin_cost(*engine, *baseline, inputs, timing);
    }
  });

  const std::string batch = batch_label(pm.graph(), used.batch);
  std::printf("%s  %s, %s, %d thread(s): %zu layers from %zu ONNX nodes, %.3f ms per run (sum of layer medians over %d runs)\n",
              m.reference.c_str(), fusion_level_name(cfg.fusion), batch.c_str(), cfg.threads, p.layers.size(),
              m.onnx_nodes, p.total_ms, iterations);
  for (const std::string& line : profile_lines) std::printf("%s (profiled at opt)\n", line.c_str());
  if (on_cpu)
    std::printf("machine peaks (%s): %.1f GFLOP/s fp32, %.1f GB/s\n\n", cached ? "cached in the store" : "measured",
                peaks.gflops, peaks.gbps);
  else
    std::printf("device peaks of %s (%s, between CUDA events): %.1f GFLOP/s fp32 (TF32 off), %.1f GB/s device memory; "
                "layer times are the GPU's, between CUDA events\n\n",
                processor.c_str(), cached ? "cached in the store" : "measured", peaks.gflops, peaks.gbps);

  std::vector<LayerProfile> top = p.layers;
  std::sort(top.begin(), top.end(), [](const LayerProfile& a, const LayerProfile& b) { return a.median_ms > b.median_ms; });
  std::printf("top layers:\n  %4s %9s %6s %9s %6s %7s  %-26s %s\n", "#", "ms", "share", "GFLOP/s", "%peak", "GB/s", "kind", "name");
  for (int i = 0; i < std::min<int>(args["top"].as<int>(), int(top.size())); ++i) {
    const LayerProfile& l = top[size_t(i)];
    char of_peak[16] = "     -";
    if (peaks.gflops > 0) std::snprintf(of_peak, sizeof of_peak, "%5.1f%%", 100 * l.gflops() / peaks.gflops);
    std::printf("  %4d %9.4f %5.1f%% %9.2f %s %7.2f  %-26s %s%s\n", l.index, l.median_ms,
                p.total_ms > 0 ? 100 * l.median_ms / p.total_ms : 0, l.gflops(), of_peak, l.gbps(), l.kind.c_str(),
                l.name.c_str(),
                l.sources.size() > 1 ? ("  (" + std::to_string(l.sources.size()) + " nodes" + (l.eager.empty() ? "" : ", eager") + ")").c_str()
                                     : (l.eager.empty() ? "" : "  (eager)"));
  }
  // Which layers allocate at run time, and why (the eager region: shapes that depend on data).
  for (const LayerProfile& l : p.layers)
    if (!l.eager.empty()) std::printf("  layer #%d runs eagerly: %s\n", l.index, l.eager.c_str());
  const int depth = args["depth"].as<int>();
  std::printf("\nmodule roll-up (* = includes time apportioned from fused layers):\n");
  for (const ModuleProfile& mp : p.modules) {
    const int level = int(std::count(mp.module.begin(), mp.module.end(), '/')) - 1;
    if (depth > 0 && level > depth) continue;
    std::printf("  %9.4f ms %5.1f%%%s  %*s%s\n", mp.ms, 100 * mp.share, mp.estimated ? "*" : " ", 2 * std::max(0, level - 1), "",
                mp.module.c_str());
  }
  if (cost) std::printf("\n%s", format_plugin_cost(*cost, "", true).c_str());
  if (store) {
    // What the engine was built with, as a plan records it (report_model.cpp matches a
    // case's profile on it).
    nlohmann::json config = build_config_to_json(used);
    if (!plugins.empty()) config["plugins"] = plugin_settings_to_json(plugins);
    const int64_t id = store->write_profile(StoredProfile{m.reference, m.hash, config.dump(), p, peaks});
    std::printf("\nstored as profile %lld in %s\n", (long long)id, store->path().c_str());
  }
  return kExitOk;
}

}  // namespace fb::cli
