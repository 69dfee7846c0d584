#include "engine/builder/builder.h"

#include <algorithm>

#include "engine/builder/eager_region.h"
#include "engine/builder/fusion_limits.h"
#include "engine/builder/shape_inputs.h"
#include "engine/builder/static_shapes.h"
#include "engine/ops/isa_kernels.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {
std::string join_sources(const std::vector<std::string>& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + s[i];
  return r;
}
// What the build log says of each constant input. A graph input that feeds a shape and
// is not bound is an Error naming it and how to give it.
std::vector<std::string> describe_bound_inputs(const Graph& g, const BuildConfig& config, const OpRegistry& ops) {
  std::vector<std::string> lines;
  const std::vector<ShapeInputUse> uses = find_shape_inputs(g, ops);
  for (const ShapeInputUse& u : uses)
    if (!config.constant_inputs.count(u.input))
      throw Error("graph input '" + u.input + "' " + shape_use_str(u) +
                  ": a static-shape engine needs its value at build time; `fusebench exec --input " + u.input +
                  "=FILE` binds it from a file, `--shape-input " + u.input + "=V[,V...]` (build, exec, inspect, profile) and a scenario's "
                  "\"shape_inputs\": {\"" + u.input + "\": [V, ...]} from values");
  for (const auto& [name, value] : config.constant_inputs) {
    auto u = std::find_if(uses.begin(), uses.end(), [&name = name](const ShapeInputUse& s) { return s.input == name; });
    lines.push_back(u != uses.end() ? "bound shape input '" + name + "' = " + value_preview(value) + " (" + shape_use_str(*u) + ")"
                                    : "bound constant input '" + name + "' = " + value_preview(value));
  }
  return lines;
}

}  // namespace

Graph optimize_graph(const Graph& imported, const BuildConfig& config, std::vector<std::string>* log, const OpRegistry& ops,
                     std::vector<FusionEvent>* events, const Backend* backend) {
  bind_host_kernels();  // constant folding may evaluate a product
  if (config.batch < 1) throw Error("batch must be at least 1");
  if (config.is_dynamic())
    throw Error("a build with an optimization profile makes a DynamicEngine (engine/builder/dynamic_engine.h), not one static engine");
  Graph g = imported;
  const std::vector<std::string> bound = describe_bound_inputs(imported, config, ops);
  bind_constant_inputs(g, config.constant_inputs);
  std::vector<DynamicNode> dynamic;
  std::map<std::string, Tensor> known = infer_static_shapes(g, config.batch, config.input_shapes, ops, &dynamic);
  log->push_back("imported: " + std::to_string(g.nodes.size()) + " nodes, " + std::to_string(g.initializers.size()) +
                 " initializers, opset " + std::to_string(g.opset) + ", batch " + std::to_string(config.batch));
  for (const std::string& line : g.import_log) log->push_back(line);
  log->insert(log->end(), bound.begin(), bound.end());
  check_fusion_limits(g, config, log);
  form_eager_region(g, dynamic, log);
  log->push_back(std::string("fusion level: ") + fusion_level_name(config.fusion) + ", precision: " + precision_name(config.precision) +
                 ", threads: " + std::to_string(config.threads));
  log->push_back(std::string("own kernels: ") + kernel_isa_description());
  bool reduced = config.precision != Precision::FP32;
  for (const LayerPrecision& c : config.layer_precisions) reduced = reduced || c.precision != Precision::FP32;
  const std::shared_ptr<const Backend> cpu = backend ? nullptr : backend_named("cpu");
  if (const std::string note = reduced ? (backend ? *backend : *cpu).reduced_precision_note() : ""; !note.empty())
    log->push_back(note);
  for (const Pass& p : passes_for(config.fusion, backend)) {
    PassContext ctx{g, config, known, *log, ops, events, p.name, backend};
    const int n = p.run(ctx);
    log->push_back(std::string("after ") + p.name + ": " + std::to_string(g.nodes.size()) + " layers (" +
                   std::to_string(n) + " rewrites)");
  }
  return g;
}

std::unique_ptr<Engine> build_engine(const Graph& imported, const BuildConfig& config, EngineKernels kernels) {
  std::vector<std::string> log;
  std::vector<FusionEvent> events;
  if (!kernels.backend) kernels.backend = backend_named(config.device);
  if (const std::string id = kernels.backend->device_identity(); !id.empty())
    log.push_back("device: " + kernels.backend->device_name() + ", " + id);
  Graph g = optimize_graph(imported, config, &log, *kernels.ops, &events, kernels.backend.get());
  log.push_back("after fusion: " + std::to_string(g.nodes.size()) + " layers from " + std::to_string(imported.nodes.size()) +
                " ONNX nodes");
  auto engine = std::make_unique<Engine>(std::move(g), config, std::move(log), std::move(kernels));
  engine->set_fusion_events(std::move(events));
  // The layer map goes into the log too, so a stored build log stands on its own.
  for (size_t i = 0; i < engine->layers().size(); ++i) {
    const LayerInfo& l = engine->layers()[i];
    engine->append_log("layer " + std::to_string(i) + ": " + l.kind + " [" + l.kernel + "] ← " + join_sources(l.sources) +
                       (l.eager.empty() ? "" : " (runs eagerly: " + l.eager + ")"));
  }
  int winograd = 0;
  for (const LayerInfo& l : engine->layers()) winograd += l.kernel.find("_wino_") != std::string::npos;
  if (winograd)
    engine->append_log(std::to_string(winograd) + " convolution(s) on oneDNN's Winograd kernels (results within float rounding "
                       "of direct convolution; \"winograd\": false or --no-winograd keeps them direct)");
  if (!config.winograd) engine->append_log("Winograd convolutions off (build setting): every convolution direct");
  engine->append_log("activation arena: " + std::to_string(engine->arena_bytes()) + " bytes");
  return engine;
}

}  // namespace fb
