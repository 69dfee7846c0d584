// fusebench debug precision MODEL --precision bf16|fp16|int8: the first tensor whose error
// against the fp32 reference exceeds the tolerance (the engine built under mark-all), and a
// small set of nodes to keep in fp32 so that the outputs meet it, found by bisection
// (harness/precision_debug.h) and printed as a scenario's precision_constraints block.
// With --sensitivity, also each reduced-precision layer run in it alone, ranked.
#include <algorithm>
#include <cstdio>
#include <map>

#include <nlohmann/json.hpp>

#include "engine/ops/half_float.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "harness/accuracy.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/exec_engine.h"
#include "harness/inputs.h"
#include "harness/model_source.h"
#include "harness/precision_debug.h"

namespace fb::cli {

namespace {

std::string accuracy_text(const AccuracyResult& a) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "cosine %.6f, max abs err %.3g", a.cosine, a.max_abs_err);
  return buf;
}

// The engine's outputs for `cfg`, in graph-output order.
std::vector<Tensor> engine_outputs(const LoadedModel& m, const BuildConfig& cfg, const std::vector<Tensor>& inputs) {
  EngineExec e = exec_engine(m.graph, cfg, inputs, [&](const BuildConfig& c) { return make_engine(m, c); });
  std::map<std::string, Tensor> by_name(e.kept.begin(), e.kept.end());
  std::vector<Tensor> out;
  for (const std::string& name : m.graph.outputs) out.push_back(by_name.at(name));
  return out;
}

// Every tensor the mark-all engine kept against the reference's, in the engine's order;
// prints one line each and returns the first over the tolerance ("" when none is).
std::string print_tensor_errors(const LoadedModel& m, const BuildConfig& cfg, const std::vector<Tensor>& inputs,
                                const std::map<std::string, Tensor>& reference, const AccuracyConfig& tol) {
  BuildConfig marked = cfg;
  marked.fusion = FusionLevel::MarkAll;
  EngineExec e = exec_engine(m.graph, marked, inputs, [&](const BuildConfig& c) { return make_engine(m, c); });
  std::map<std::string, std::string> producer;  // tensor -> source node
  for (const Node& n : m.graph.nodes)
    for (const std::string& o : n.outputs) producer[o] = n.name;
  std::map<std::string, std::string> precision_of;  // source node -> what its layer ran in
  for (const LayerInfo& l : e.engine->layers())
    for (const std::string& s : l.sources) precision_of[s] = l.precision;
  std::string first_bad;
  std::printf("per tensor (engine under mark-all, %s, against the fp32 reference):\n", cfg.precision.c_str());
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

// Each layer the build runs in reduced precision, run in it alone (every other node in
// fp32, one build per layer): the outputs' error, worst first. Where a network amplifies
// error on its way to the outputs, the first tensor over the tolerance lies downstream of
// the layers that caused it; this says what each layer costs on its own. Small
// independent errors add up in 1 - cosine, so the layers' sum beside that of all of them
// together says how far the ranking explains the whole (where they differ, the errors
// interact).
void print_layer_sensitivity(const LoadedModel& m, const BuildConfig& cfg, const std::vector<Tensor>& inputs,
                             const std::vector<Tensor>& reference_outputs, const AccuracyConfig& tol,
                             const AccuracyResult& together) {
  const EngineExec full = exec_engine(m.graph, cfg, inputs, [&](const BuildConfig& c) { return make_engine(m, c); });
  struct Alone {
    const LayerInfo* layer;
    AccuracyResult accuracy;
  };
  std::vector<Alone> ranked;
  for (const LayerInfo& l : full.engine->layers()) {
    // Views and the precision boundaries the builder inserts have no source of their own to move.
    if (l.precision == "fp32" || l.sources.empty() || l.kernel == "view") continue;
    BuildConfig c = cfg;
    c.precision_mode = PrecisionMode::Prefer;  // as the full build placed it; the rest falls back to fp32
    c.layer_precisions.clear();
    for (const std::string& s : l.sources) c.layer_precisions.push_back({s, l.precision});
    c.layer_precisions.push_back({"*", "fp32"});  // first match wins
    ranked.push_back({&l, compare_outputs(engine_outputs(m, c, inputs), reference_outputs, m.graph.outputs, tol)});
  }
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Alone& a, const Alone& b) { return a.accuracy.cosine < b.accuracy.cosine; });
  std::printf("each reduced-precision layer alone in it (every other node fp32), worst first:\n");
  double sum = 0;
  for (const Alone& a : ranked) {
    // 1 - cosine, not the cosine: most layers alone sit at 0.99999x, where six digits of
    // the cosine would print them all alike.
    sum += 1 - a.accuracy.cosine;
    std::printf("  1 - cosine %.2e, max abs err %.3g  %-5s %s  (%s, %zu node%s)\n", 1 - a.accuracy.cosine,
                a.accuracy.max_abs_err, a.layer->precision.c_str(), a.layer->name.c_str(), a.layer->kind.c_str(),
                a.layer->sources.size(), a.layer->sources.size() == 1 ? "" : "s");
  }
  std::printf("1 - cosine: the %zu layers alone add up to %.3g; all of them together %.3g\n\n", ranked.size(), sum,
              1 - together.cosine);
}

}  // namespace

int cmd_debug(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) != "precision")
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
  if (auto rc = parse_or_help(opts, argc - 1, argv + 1, &args)) return *rc;
  if (!args.count("model")) throw Error("a MODEL argument is required");
  BuildConfig cfg = build_config_from(args);
  if (cfg.precision == "fp32") throw Error("--precision fp32: nothing to debug; give the reduced precision (bf16, fp16, int8)");
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

    const std::string first_bad = print_tensor_errors(m, cfg, inputs, reference, tol);
    std::printf("first tensor over the tolerance: %s\n\n", first_bad.empty() ? "none" : first_bad.c_str());

    // Candidates: every named node, in topological order.
    std::vector<std::string> nodes;
    for (const Node& n : m.graph.nodes)
      if (!n.name.empty()) nodes.push_back(n.name);
    auto accuracy_with = [&](const std::vector<size_t>& fp32) {
      BuildConfig c = cfg;
      std::vector<LayerPrecision> overrides;
      for (size_t i : fp32) overrides.push_back({nodes[i], "fp32"});
      c.layer_precisions.insert(c.layer_precisions.begin(), overrides.begin(), overrides.end());  // first match wins
      return compare_outputs(engine_outputs(m, c, inputs), reference_outputs, m.graph.outputs, tol);
    };
    const AccuracyResult before = accuracy_with({});
    std::printf("outputs at %s, fusion %s: %s (%s)\n", cfg.precision.c_str(), fusion_level_name(cfg.fusion),
                accuracy_text(before).c_str(), before.passed ? "within the tolerance" : "over the tolerance");
    if (args.count("sensitivity")) print_layer_sensitivity(m, cfg, inputs, reference_outputs, tol, before);
    int checks = 0;
    const std::vector<size_t> needed =
        bisect_needed_items(nodes.size(), [&](const std::vector<size_t>& s) { return accuracy_with(s).passed; }, &checks);
    const AccuracyResult after = accuracy_with(needed);
    std::printf("bisection: %zu of %zu nodes kept in fp32 (%d builds); outputs then: %s (%s)\n", needed.size(),
                nodes.size(), checks, accuracy_text(after).c_str(), after.passed ? "within the tolerance" : "OVER");
    nlohmann::ordered_json layers = nlohmann::ordered_json::object();
    for (size_t i : needed) layers[nodes[i]] = "fp32";
    const nlohmann::ordered_json block = {{"precision_constraints", {{"mode", "obey"}, {"layers", layers}}}};
    std::printf("paste into the scenario:\n%s\n", block.dump(2).c_str());
    return after.passed ? kExitOk : kExitVerdictFailed;
  });
}

}  // namespace fb::cli
