// fusebench inspect: what the builder made of a model, or what a plan holds — every engine
// layer with its kind, kernel, precision, shapes and source ONNX nodes (and, for the eager
// region, why it runs eagerly), then the build log.
#include <nlohmann/json.hpp>

#include "engine/builder/builder.h"

#include "harness/cases/calibration.h"
#include "harness/cases/model_source.h"
#include "harness/cases/plugin_model.h"
#include "harness/cli/batch_label.h"
#include "harness/cli/commands.h"
#include "harness/cli/plan_options.h"
#include "harness/cli/run_selection.h"
#include "harness/cli/shape_profile_options.h"
#include "harness/measure/plugin_cost_text.h"

namespace fb::cli {

namespace {
std::string shapes_str(const std::vector<Shape>& v) {
  std::string s;
  for (size_t i = 0; i < v.size(); ++i) s += (i ? " " : "") + shape_str(v[i]);
  return s;
}
// What plugins cost, as `run` stored it: every case of the run that has a cost split.
int show_stored_plugin_costs(const cxxopts::ParseResult& args) {
  const ResultStore store = open_existing_store(args["db"].as<std::string>());
  const int64_t run = pick_run(store, args.count("run") ? std::optional<int64_t>(args["run"].as<int64_t>()) : std::nullopt);
  int shown = 0;
  for (const StoredCase& sc : store.load_cases(run)) {
    if (!sc.result.plugin_cost) continue;
    std::cout << sc.result.spec.label() << "  [" << sc.result.spec.case_key() << "]\n"
              << format_plugin_cost(*sc.result.plugin_cost, "  ", true) << "\n";
    ++shown;
  }
  std::cout << "run " << run << ": " << shown << " case(s) with a plugin cost split\n";
  return kExitOk;
}

// Every tensor a partition point can name: the graph's inputs, then each node's outputs in
// graph order, with the node and op that make it.
int list_tensors(const LoadedModel& m) {
  size_t count = m.graph.inputs.size();
  for (const GraphInput& in : m.graph.inputs) std::cout << in.name << "  (model input)\n";
  for (const Node& n : m.graph.nodes)
    for (const std::string& o : n.outputs) {
      if (o.empty()) continue;
      std::cout << o << "  (" << n.op_type << " " << n.name << ")\n";
      ++count;
    }
  std::cout << m.reference << ": " << count << " tensors listed, and " << m.graph.initializers.size()
            << " weights (initializers)\n";
  return kExitOk;
}

}  // namespace

int cmd_inspect(int argc, char** argv) {
  cxxopts::Options opts("fusebench inspect", "Show the engine layers built from a model, with their source nodes.");
  add_build_options(opts, "standard");
  add_shape_profile_options(opts);
  add_plugin_options(opts);
  opts.add_options()("format", "text or json", cxxopts::value<std::string>()->default_value("text"))(
      "db", "instead of a MODEL: show the plugin cost splits stored in this results database", cxxopts::value<std::string>())(
      "run", "with --db: the run (default: the latest)", cxxopts::value<int64_t>())(
      "tensors", "list the model's tensors (the names --partition takes) with the node and op that make each, "
      "instead of building it");
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (args.count("db")) {
    if (args.count("model")) throw Error("give a MODEL or --db, not both");
    return show_stored_plugin_costs(args);
  }
  if (!args.count("model")) throw Error("a MODEL argument (or --db FILE) is required");
  const std::string format = args["format"].as<std::string>();
  if (format != "text" && format != "json") throw Error("--format must be text or json, got '" + format + "'");

  LoadedModel m = load_model(args["model"].as<std::string>());
  if (args.count("tensors")) return list_tensors(m);
  BuildConfig cfg = build_config_for(args, m);
  cfg.shape_profile = shape_profile_from(args);
  const PluginSettings plugins = plugin_settings_from(args);
  const PluginModel pm = apply_plugins(m, plugins);
  naming_model(m, [&] { calibrate_for_int8(m, pm.graph(), cfg, pm.ops); });
  // A dynamic engine (an optimization profile) shows its specialization for the opt shapes.
  const InspectedEngine built = build_for_inspection(m, pm, !plugins.empty(), cfg);
  const Engine* engine = built.engine;
  std::vector<std::string> build_log = pm.log;
  build_log.insert(build_log.end(), built.build_log.begin(), built.build_log.end());

  if (format == "json") {
    nlohmann::json j;
    j["model"] = m.reference;
    j["model_hash"] = m.hash;
    j["onnx_nodes"] = m.onnx_nodes;
    j["fusion"] = fusion_level_name(cfg.fusion);
    j["batch"] = engine->config().batch;  // a dynamic engine's: its opt specialization's
    j["dynamic"] = built.dynamic != nullptr;
    j["arena_bytes"] = engine->arena_bytes();
    j["layers"] = nlohmann::json::array();
    for (const LayerInfo& l : engine->layers())
      j["layers"].push_back({{"name", l.name}, {"kind", l.kind}, {"kernel", l.kernel}, {"precision", precision_name(l.precision)},
                             {"precision_reason", l.precision_reason},
                             {"input_shapes", l.input_shapes}, {"output_shapes", l.output_shapes}, {"flops", l.flops}, {"bytes", l.bytes},
                             {"sources", l.sources}, {"eager", l.eager}});
    j["fusion_events"] = nlohmann::json::array();
    for (const FusionEvent& e : engine->fusion_events())
      j["fusion_events"].push_back({{"pass", e.pass}, {"root", e.root}, {"nodes", e.nodes}, {"fused", e.fused}, {"refused", e.refused}});
    j["build_log"] = build_log;
    std::cout << j.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << m.reference << ": " << m.onnx_nodes << " ONNX nodes → " << engine->layers().size() << " engine layers ("
            << fusion_level_name(cfg.fusion) << ", "
            << (built.dynamic ? "dynamic: the specialization for the profile's opt shapes" : batch_label(pm.graph(), cfg.batch))
            << ")\n\n";
  for (size_t i = 0; i < engine->layers().size(); ++i) {
    const LayerInfo& l = engine->layers()[i];
    std::cout << "#" << i << "  " << l.kind << "  [" << l.kernel << ", " << precision_name(l.precision) << " (" << l.precision_reason << ")]  "
              << shapes_str(l.input_shapes)
              << " → " << (l.eager.empty() ? shapes_str(l.output_shapes) : "(shapes known at run time)");
    if (l.flops > 0 || l.bytes > 0) std::cout << "  " << l.flops / 1e6 << " MFLOP, " << l.bytes / 1e6 << " MB";
    std::cout << "\n";
    if (!l.eager.empty()) std::cout << "      runs eagerly, outputs allocated at run time: " << l.eager << "\n";
    for (const std::string& s : l.sources) std::cout << "      ← " << s << "\n";
  }
  std::cout << "\nbuild log:\n";
  for (const std::string& line : build_log)
    if (line.rfind("layer ", 0) != 0) std::cout << "  " << line << "\n";
  return kExitOk;
}

}  // namespace fb::cli
