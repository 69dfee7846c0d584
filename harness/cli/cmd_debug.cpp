// fusebench debug precision MODEL --precision bf16|fp16|int8: the first tensor whose error
// against the fp32 reference exceeds the tolerance (the engine built under mark-all), and a
// small set of nodes to keep in fp32 so that the outputs meet it, found by bisection
// (harness/measure/precision_debug.h) and printed as a scenario's precision_constraints block.
// With --sensitivity, also each reduced-precision layer run in it alone, ranked.
#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include "engine/ir/no_layer_in_precision.h"
#include "engine/ops/half_float.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "harness/cases/accuracy.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/measure/exec_engine.h"
#include "harness/measure/precision_debug.h"

namespace fb::cli {

namespace {

std::string accuracy_text(const AccuracyResult& a) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "cosine %.6f, max abs err %.3g", a.cosine, a.max_abs_err);
  return buf;
}

// The model's outputs from an engine run, in graph-output order.
std::vector<Tensor> outputs_of(const LoadedModel& m, const EngineExec& e) {
  std::map<std::string, Tensor> by_name(e.kept.begin(), e.kept.end());
  std::vector<Tensor> outputs;
  for (const std::string& name : m.graph.outputs) outputs.push_back(by_name.at(name));
  return outputs;
}

EngineExec build_and_run(const LoadedModel& m, const BuildConfig& cfg, const std::vector<Tensor>& inputs) {
  return exec_engine(m.graph, cfg, inputs, [&](const BuildConfig& c) { return make_engine(m, c); });
}

// Every tensor the mark-all engine kept against the reference's, in the engine's order;
// prints one line each and returns the first over the tolerance ("" when none is).
std::string print_tensor_errors(const LoadedModel& m, const BuildConfig& cfg, const std::vector<Tensor>& inputs,
                                const std::map<std::string, Tensor>& reference, const AccuracyConfig& tol) {
  BuildConfig marked = cfg;
  marked.fusion = FusionLevel::MarkAll;
  EngineExec e = build_and_run(m, marked, inputs);
  std::map<std::string, std::string> producer;  // tensor -> source node
  for (const Node& n : m.graph.nodes)
    for (const std::string& o : n.outputs) producer[o] = n.name;
  std::map<std::string, std::string> precision_of;  // source node -> what its layer ran in
  for (const LayerInfo& l : e.engine->layers())
    for (const std::string& s : l.sources) precision_of[s] = precision_name(l.precision);
  std::string first_bad;
  std::printf("per tensor (engine under mark-all, %s, against the fp32 reference):\n", precision_name(cfg.precision));
  for (const auto& [name, t] : e.kept) {
    auto ref = reference.find(name);
    auto node = producer.find(name);
    if (ref == reference.end() || node == producer.end()) continue;  // a precision Convert's output
    // A 16-bit layer keeps its output in 16 bits: compared as the floats it stands for.
    const AccuracyResult a = compare_outputs({is_half_type(t.dtype()) ? widen_half(t) : t}, {ref->second}, {name}, tol);
    const std::string& precision = precision_of[node->second];
    std::printf("  %-4s %-5s %s  (node %s)  %s\n", a.passed ? "ok" : "OVER", precision.c_str(), name.c_str(),
                node->second.c_str(), accuracy_text(a).c_str());
    if (!a.passed && first_bad.empty()) first_bad = name + " (node " + node->second + ", " + precision + "): " + accuracy_text(a);
  }
  return first_bad;
}

// Whether a layer runs in a reduced precision of its own: views and the Converts the builder
// inserts at precision boundaries carry their neighbours' precision, not one they were given.
bool runs_reduced(const LayerInfo& l) { return l.precision != Precision::FP32 && !l.sources.empty() && l.kernel != "view"; }

// One build of the model and its outputs against the reference. A build that leaves no layer
// in the reduced precision (the int8 build refuses it; a bf16 or fp16 one is then an fp32
// engine) is no answer for that precision: `accuracy` is empty and `none_left` says why.
struct Trial {
  std::optional<AccuracyResult> accuracy;
  std::string none_left;
  std::vector<LayerInfo> layers;
  bool passed() const { return accuracy && accuracy->passed; }
};

Trial try_build(const LoadedModel& m, const BuildConfig& cfg, const std::vector<Tensor>& inputs,
                const std::vector<Tensor>& reference_outputs, const AccuracyConfig& tol) {
  EngineExec e;
  try {
    e = build_and_run(m, cfg, inputs);
  } catch (const NoLayerInPrecision& none) {
    return {std::nullopt, none.what(), {}};
  }
  std::vector<LayerInfo> layers = e.engine->layers();
  if (std::none_of(layers.begin(), layers.end(), runs_reduced))
    return {std::nullopt, "every layer runs in fp32 (no layer can run in " + std::string(precision_name(cfg.precision)) + ")", std::move(layers)};
  return {compare_outputs(outputs_of(m, e), reference_outputs, m.graph.outputs, tol), "", std::move(layers)};
}

// One reduced-precision layer of the full build run in it alone (every other node fp32).
struct Alone {
  LayerInfo layer;
  Trial trial;
};

// Each layer the build runs in reduced precision, run in it alone (one build per layer),
// best first. Where a network amplifies error on its way to the outputs, the first tensor
// over the tolerance lies downstream of the layers that caused it; this says what each
// layer costs on its own. It also bounds what the precision can do: if more fp32 never
// hurts, any build that meets the tolerance with a layer in the reduced precision is met by
// that layer's build alone.
std::vector<Alone> layers_alone(const LoadedModel& m, const BuildConfig& cfg, const std::vector<LayerInfo>& full_layers,
                                const std::vector<Tensor>& inputs, const std::vector<Tensor>& reference_outputs,
                                const AccuracyConfig& tol) {
  std::vector<Alone> alone;
  for (const LayerInfo& l : full_layers) {
    if (!runs_reduced(l)) continue;
    BuildConfig c = cfg;
    c.precision_mode = PrecisionMode::Prefer;  // as the full build placed it; the rest falls back to fp32
    c.layer_precisions.clear();
    for (const std::string& s : l.sources) c.layer_precisions.push_back({s, l.precision});
    c.layer_precisions.push_back({"*", Precision::FP32});  // first match wins
    alone.push_back({l, try_build(m, c, inputs, reference_outputs, tol)});
  }
  // Best first; a layer that no longer runs in the precision alone goes last.
  std::stable_sort(alone.begin(), alone.end(), [](const Alone& a, const Alone& b) {
    if (!a.trial.accuracy || !b.trial.accuracy) return a.trial.accuracy.has_value() > b.trial.accuracy.has_value();
    return a.trial.accuracy->cosine > b.trial.accuracy->cosine;
  });
  return alone;
}

// --sensitivity: the layers alone, worst first. Small independent errors add up in
// 1 - cosine, so the layers' sum beside that of all of them together says how far the
// ranking explains the whole (where they differ, the errors interact).
void print_layer_sensitivity(const std::vector<Alone>& alone, const AccuracyResult& together) {
  std::printf("each reduced-precision layer alone in it (every other node fp32), worst first:\n");
  double sum = 0;
  size_t ranked = 0;
  for (auto it = alone.rbegin(); it != alone.rend(); ++it) {
    const LayerInfo& l = it->layer;
    const size_t n = l.sources.size();
    if (!it->trial.accuracy) continue;
    // 1 - cosine, not the cosine: most layers alone sit at 0.99999x, where six digits of
    // the cosine would print them all alike.
    const AccuracyResult& a = *it->trial.accuracy;
    sum += 1 - a.cosine;
    ++ranked;
    std::printf("  1 - cosine %.2e, max abs err %.3g  %-5s %s  (%s, %zu node%s)\n", 1 - a.cosine, a.max_abs_err,
                precision_name(l.precision), l.name.c_str(), l.kind.c_str(), n, n == 1 ? "" : "s");
  }
  for (const Alone& a : alone)
    if (!a.trial.accuracy)
      std::printf("  not ranked: %s (%s) no longer runs in %s alone: %s\n", a.layer.name.c_str(), a.layer.kind.c_str(),
                  precision_name(a.layer.precision), a.trial.none_left.c_str());
  std::printf("1 - cosine: the %zu layers alone add up to %.3g; all of them together %.3g\n\n", ranked, sum,
              1 - together.cosine);
}

}  // namespace

int cmd_debug(int argc, char** argv) {
  // `debug --help` is that of its one subcommand, `debug precision --help`.
  const bool help_only = argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h");
  if (!help_only && (argc < 2 || std::string(argv[1]) != "precision"))
    throw Error("usage: fusebench debug precision MODEL --precision bf16|fp16|int8 [--min-cosine X | --atol A --rtol R]");
  cxxopts::Options opts("fusebench debug precision",
                        "Where reduced precision breaks a model: the first tensor over the tolerance, and nodes to keep\n"
                        "in fp32 (found by bisection) so that the outputs meet it, as a scenario block.");
  add_build_options(opts, "standard");
  opts.add_options()("min-cosine", "tolerance: cosine similarity of the outputs to the fp32 reference, at least",
                     cxxopts::value<double>())(
      "atol", "tolerance: |engine - reference| <= atol + rtol*|reference| per element", cxxopts::value<double>())(
      "rtol", "see --atol (default 1e-3 with --atol)", cxxopts::value<double>())(
      "seed", "seed of the generated inputs", cxxopts::value<uint64_t>()->default_value("1234"))(
      "threads", "threads", cxxopts::value<int>()->default_value("1"))(
      "sensitivity", "also run each reduced-precision layer alone in it (one build per layer), worst first");
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, help_only ? argc : argc - 1, help_only ? argv : argv + 1, &args)) return *rc;
  if (!args.count("model")) throw Error("a MODEL argument is required");
  BuildConfig cfg = build_config_from(args);
  if (cfg.precision == Precision::FP32) throw Error("--precision fp32: nothing to debug; give the reduced precision (bf16, fp16, int8)");
  AccuracyConfig tol = default_accuracy(cfg.precision);
  if (args.count("min-cosine")) tol.min_cosine = args["min-cosine"].as<double>();
  if (args.count("atol") || args.count("rtol")) {
    tol.elementwise = true;
    tol.atol = args.count("atol") ? args["atol"].as<double>() : 0;
    tol.rtol = args.count("rtol") ? args["rtol"].as<double>() : 1e-3;
  }
  const LoadedModel m = load_model(args["model"].as<std::string>());
  if (m.plan) throw Error(m.reference + ": debug precision builds the model many times; give the model, not a plan");

  ThreadScope threads(args["threads"].as<int>());
  return threads.run([&] {
    const ReferenceExecutor ref(m.graph, cfg.batch, cfg.input_shapes);
    const std::vector<Tensor> inputs = make_inputs(m.graph, ref.input_shapes(), args["seed"].as<uint64_t>());
    const std::map<std::string, Tensor> reference = ref.run_all(inputs);
    std::vector<Tensor> reference_outputs;
    for (const std::string& name : m.graph.outputs) reference_outputs.push_back(reference.at(name));

    // The build as asked: one with no layer in the precision at all is the answer itself.
    const Trial full = try_build(m, cfg, inputs, reference_outputs, tol);
    if (!full.accuracy) {
      std::printf("conclusion: %s cannot be used on this model: %s\n", precision_name(cfg.precision), full.none_left.c_str());
      return kExitPrecisionCannotMeet;
    }
    const std::string first_bad = print_tensor_errors(m, cfg, inputs, reference, tol);
    std::printf("first tensor over the tolerance: %s\n\n", first_bad.empty() ? "none" : first_bad.c_str());
    std::printf("outputs at %s, fusion %s: %s (%s)\n", precision_name(cfg.precision), fusion_level_name(cfg.fusion),
                accuracy_text(*full.accuracy).c_str(), full.passed() ? "within the tolerance" : "over the tolerance");
    const bool sensitivity = args.count("sensitivity") > 0;
    std::vector<Alone> alone;
    if (sensitivity || !full.passed()) alone = layers_alone(m, cfg, full.layers, inputs, reference_outputs, tol);
    if (sensitivity) print_layer_sensitivity(alone, *full.accuracy);
    if (full.passed()) {
      std::printf("conclusion: the %s build meets the tolerance as it is: no node needs to stay in fp32\n",
                  precision_name(cfg.precision));
      return kExitOk;
    }

    // Candidates: every named node, in topological order.
    std::vector<std::string> nodes;
    for (const Node& n : m.graph.nodes)
      if (!n.name.empty()) nodes.push_back(n.name);
    // If more fp32 never hurts, a build that meets the tolerance keeps some layer in the
    // precision and is met by that layer alone: when no layer alone meets it, nothing does.
    if (alone.empty() || !alone.front().trial.passed()) {
      std::printf("conclusion: %s cannot meet this tolerance on this model: ", precision_name(cfg.precision));
      if (alone.empty() || !alone.front().trial.accuracy) {
        std::printf("no layer runs in %s on its own\n", precision_name(cfg.precision));
      } else {
        const Alone& best = alone.front();
        // 1 - cosine: the best layer alone is often closer than six digits of the cosine show.
        std::printf("the best build with any layer in %s keeps one, %s (%zu of %zu nodes in %s, the rest fp32), "
                    "and reaches 1 - cosine %.2e (max abs err %.3g); more fp32 is assumed never to hurt, so no build "
                    "that keeps a layer in %s does better\n",
                    precision_name(cfg.precision), best.layer.name.c_str(), best.layer.sources.size(), nodes.size(),
                    precision_name(cfg.precision), 1 - best.trial.accuracy->cosine, best.trial.accuracy->max_abs_err,
                    precision_name(cfg.precision));
      }
      BuildConfig fp32 = cfg;
      fp32.precision = Precision::FP32;
      fp32.layer_precisions.clear();
      const AccuracyResult f =
          compare_outputs(outputs_of(m, build_and_run(m, fp32, inputs)), reference_outputs, m.graph.outputs, tol);
      std::printf("  the fp32 engine itself: %s (%s)\n", accuracy_text(f).c_str(),
                  f.passed ? "within the tolerance" : "over it too: the tolerance is tighter than fp32's own rounding");
      return kExitPrecisionCannotMeet;
    }

    // The bisection runs over the nodes outside the best layer alone, so that its upper
    // bound (all of them in fp32) is that layer's passing build, not an all-fp32 engine.
    const std::set<std::string> kept_reduced(alone.front().layer.sources.begin(), alone.front().layer.sources.end());
    std::vector<std::string> candidates;
    for (const std::string& n : nodes)
      if (!kept_reduced.count(n)) candidates.push_back(n);
    auto trial_with = [&](const std::vector<size_t>& fp32) {
      BuildConfig c = cfg;
      std::vector<LayerPrecision> overrides;
      for (size_t i : fp32) overrides.push_back({candidates[i], Precision::FP32});
      c.layer_precisions.insert(c.layer_precisions.begin(), overrides.begin(), overrides.end());  // first match wins
      return try_build(m, c, inputs, reference_outputs, tol);
    };
    int checks = 0;
    const std::optional<std::vector<size_t>> needed = bisect_needed_items(
        candidates.size(), [&](const std::vector<size_t>& set) { return trial_with(set).passed(); }, &checks);
    if (!needed) {
      std::printf("conclusion: %s cannot meet this tolerance on this model: %s alone met it, but not with every other "
                  "named node constrained to fp32 (%d builds)\n",
                  precision_name(cfg.precision), alone.front().layer.name.c_str(), checks);
      return kExitPrecisionCannotMeet;
    }
    const Trial after = trial_with(*needed);
    std::printf("bisection: %zu of %zu nodes kept in fp32 (%d builds); outputs then: %s (%s)\n", needed->size(),
                nodes.size(), checks, accuracy_text(*after.accuracy).c_str(),
                after.passed() ? "within the tolerance" : "OVER");
    nlohmann::ordered_json layers = nlohmann::ordered_json::object();
    for (size_t i : *needed) layers[candidates[i]] = "fp32";
    const nlohmann::ordered_json block = {{"precision_constraints", {{"mode", "obey"}, {"layers", layers}}}};
    std::printf("paste into the scenario:\n%s\n", block.dump(2).c_str());
    return after.passed() ? kExitOk : kExitVerdictFailed;
  });
}

}  // namespace fb::cli
