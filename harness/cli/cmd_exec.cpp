// fusebench exec: runs a model once, on inputs from .npy/.pb files or seeded ones, with the
// engine or the reference executor, and saves every output as .npy, so fusebench's answer
// can be checked against any other runtime (like `polygraphy run`).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <set>

#include "engine/builder/builder.h"
#include "engine/builder/dynamic_engine.h"
#include "engine/builder/shape_inputs.h"
#include "engine/builder/static_shapes.h"
#include "engine/ops/half_float.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"
#include "harness/cases/tensor_file.h"
#include "harness/cli/batch_label.h"
#include "harness/cli/commands.h"
#include "harness/cli/plan_options.h"
#include "harness/cli/shape_profile_options.h"
#include "harness/measure/exec_engine.h"

namespace fb::cli {

namespace fs = std::filesystem;

namespace {

struct GivenInput {
  std::string file;
  Tensor tensor;
};

// "float32[1,seq,768]": the model's declaration of an input, batch bound, other symbolic
// dims by name.
std::string declared_str(const GraphInput& in, int64_t batch) {
  std::string r = dtype_name(in.dtype) + "[";
  for (size_t d = 0; d < in.dims.size(); ++d) {
    if (d) r += ",";
    if (in.dims[d] >= 0) r += std::to_string(in.dims[d]);
    else if (d == 0) r += std::to_string(batch);
    else r += in.dim_params.size() > d && !in.dim_params[d].empty() ? in.dim_params[d] : "?";
  }
  return r + "]";
}

// A file fits an input when dtype and rank agree, fixed dims are equal and a symbolic
// dim 0 equals the batch; other symbolic dims take the file's size.
bool fits(const GraphInput& in, const Tensor& t, int64_t batch) {
  if (t.dtype() != in.dtype || t.shape().size() != in.dims.size()) return false;
  for (size_t d = 0; d < in.dims.size(); ++d) {
    const int64_t want = in.dims[d] >= 0 ? in.dims[d] : d == 0 ? batch : t.shape()[d];
    if (t.shape()[d] != want) return false;
  }
  return true;
}

std::string input_names(const Graph& g) {
  std::string r;
  for (const GraphInput& in : g.inputs) r += (r.empty() ? "" : ", ") + in.name;
  return r;
}

// --input NAME=FILE values, read and checked against the model's inputs.
std::map<std::string, GivenInput> read_given_inputs(const std::vector<std::string>& specs, const Graph& g, int64_t batch) {
  std::map<std::string, GivenInput> given;
  for (const std::string& spec : specs) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size())
      throw Error("--input '" + spec + "': expected NAME=FILE");
    const std::string name = spec.substr(0, eq), file = spec.substr(eq + 1);
    const GraphInput* in = nullptr;
    for (const GraphInput& gi : g.inputs)
      if (gi.name == name) in = &gi;
    if (!in) throw Error("--input '" + spec + "': the model has no input '" + name + "' (its inputs: " + input_names(g) + ")");
    if (given.count(name)) throw Error("--input: '" + name + "' is given twice");
    Tensor t = read_tensor_file(file);
    if (!fits(*in, t, batch))
      throw Error("--input '" + name + "': " + file + " holds " + dtype_name(t.dtype()) + shape_str(t.shape()) +
                  ", but the model's input '" + name + "' is " + declared_str(*in, batch) + " at batch " + std::to_string(batch));
    given[name] = GivenInput{file, std::move(t)};
  }
  return given;
}

// Inputs in graph order: the given ones, and for the rest the seeded inputs `run` makes
// (same seed, same bytes). Given inputs are switched to a type make_inputs can generate
// so that an input only a file can supply does not stop the others being generated.
std::vector<Tensor> assemble_inputs(const Graph& g, const std::map<std::string, GivenInput>& given,
                                    const std::map<std::string, Shape>& shapes, uint64_t seed) {
  Graph signature;
  signature.inputs = g.inputs;
  std::vector<Shape> in_shapes;
  for (GraphInput& in : signature.inputs) {
    in_shapes.push_back(given.count(in.name) ? Shape{0} : shapes.at(in.name));
    if (given.count(in.name)) in.dtype = DType::Float32;
  }
  std::vector<Tensor> inputs = make_inputs(signature, in_shapes, seed);
  for (size_t i = 0; i < g.inputs.size(); ++i)
    if (auto it = given.find(g.inputs[i].name); it != given.end()) inputs[i] = it->second.tensor;
  return inputs;
}

struct Summary {
  double min = std::numeric_limits<double>::infinity(), max = -std::numeric_limits<double>::infinity(), mean = 0;
  int64_t nan = 0;
};

template <typename T> Summary summarize_as(const Tensor& t) {
  Summary s;
  const T* p = static_cast<const T*>(t.raw());
  double sum = 0;
  for (int64_t i = 0, n = t.numel(); i < n; ++i) {
    const double v = static_cast<double>(p[i]);
    if (std::isnan(v)) {
      ++s.nan;
      continue;
    }
    s.min = std::min(s.min, v);
    s.max = std::max(s.max, v);
    sum += v;
  }
  if (t.numel() > s.nan) s.mean = sum / double(t.numel() - s.nan);
  return s;
}

Summary summarize(const Tensor& t) {
  switch (t.dtype()) {
    case DType::Float32: return summarize_as<float>(t);
    case DType::Float64: return summarize_as<double>(t);
    case DType::Float16: case DType::BFloat16: return summarize_as<float>(widen_half(t));
    case DType::Int8: return summarize_as<int8_t>(t);
    case DType::Int16: return summarize_as<int16_t>(t);
    case DType::Int32: return summarize_as<int32_t>(t);
    case DType::Int64: return summarize_as<int64_t>(t);
    case DType::UInt8: return summarize_as<uint8_t>(t);
    case DType::UInt16: return summarize_as<uint16_t>(t);
    case DType::UInt32: return summarize_as<uint32_t>(t);
    case DType::UInt64: return summarize_as<uint64_t>(t);
    case DType::Bool: return summarize_as<bool>(t);
    default: throw Error("cannot summarize a tensor of type " + dtype_name(t.dtype()));
  }
}

std::string describe_values(const Tensor& t) {
  if (t.numel() == 0) return "empty";
  const Summary s = summarize(t);
  char buf[160];
  if (s.nan == t.numel()) std::snprintf(buf, sizeof buf, "all %lld NaN", (long long)s.nan);
  else std::snprintf(buf, sizeof buf, "min %.6g  max %.6g  mean %.6g", s.min, s.max, s.mean);
  std::string r = buf;
  if (s.nan && s.nan != t.numel()) r += "  (" + std::to_string(s.nan) + " NaN)";
  return r;
}

// Writes tensors as NAME.npy under `dir` (created if missing); returns the paths, in order.
std::vector<std::string> save_all(const std::string& dir, const std::vector<std::string>& names, const std::vector<Tensor>& ts) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir)) throw Error(dir + ": cannot create the directory" + (ec ? ": " + ec.message() : ""));
  std::set<std::string> taken;
  std::vector<std::string> paths;
  for (size_t i = 0; i < ts.size(); ++i) {
    paths.push_back((fs::path(dir) / npy_file_name(names[i], taken)).string());
    write_npy(paths.back(), ts[i]);
  }
  return paths;
}

// The reference executor's answer: the graph outputs, or under mark-all every value in
// the order nodes compute it, so the two executors' files can be diffed one by one.
void run_reference(const LoadedModel& m, const BuildConfig& cfg, const std::vector<Tensor>& inputs,
                   std::vector<std::string>* names, std::vector<Tensor>* outputs) {
  ReferenceExecutor ref(m.graph, cfg.batch, cfg.input_shapes);
  if (cfg.fusion != FusionLevel::MarkAll) {
    *outputs = ref.run(inputs);
    *names = m.graph.outputs;
    return;
  }
  const std::map<std::string, Tensor> all = ref.run_all(inputs);
  for (const Node& n : m.graph.nodes)
    for (const std::string& o : n.outputs)
      if (auto it = all.find(o); !o.empty() && it != all.end()) {
        names->push_back(o);
        outputs->push_back(it->second);
      }
}

}  // namespace

int cmd_exec(int argc, char** argv) {
  cxxopts::Options opts("fusebench exec",
                        "Run a model once on inputs from .npy/.pb files (seeded ones for the rest) and save every output as .npy.");
  add_build_options(opts, "standard");
  opts.add_options()("executor", "engine or reference", cxxopts::value<std::string>()->default_value("engine"))(
      "threads", "threads", cxxopts::value<int>()->default_value("1"))(
      "input", "NAME=FILE: an input from .npy or ONNX TensorProto .pb (repeatable); one that feeds a shape (Reshape's shape, Slice's starts...) is bound into the engine at build time and must be given", cxxopts::value<std::vector<std::string>>())(
      "seed", "seed of the generated inputs (the same bytes `run` uses)", cxxopts::value<uint64_t>()->default_value("1234"))(
      "save-outputs", "DIR: write every output there as NAME.npy (with --fusion mark-all: every tensor computed)", cxxopts::value<std::string>())(
      "save-inputs", "DIR: write every input there as NAME.npy (the generated ones too)", cxxopts::value<std::string>());
  add_shape_profile_options(opts);
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("model")) throw Error("a MODEL argument is required");
  const std::string executor = args["executor"].as<std::string>();
  if (executor != "engine" && executor != "reference")
    throw Error("--executor '" + executor + "': expected engine or reference");

  LoadedModel m = load_model(args["model"].as<std::string>());
  BuildConfig cfg = build_config_for(args, m);  // a plan's own config, where MODEL is a plan
  if (args.count("threads") || !m.plan) cfg.threads = args["threads"].as<int>();
  cfg.shape_profile = shape_profile_from(args);
  if (cfg.is_dynamic()) {
    if (executor != "engine") throw Error("--min-shapes, --opt-shapes and --max-shapes build a dynamic engine: they need --executor engine");
    check_dynamic_build(m, cfg);
  }
  std::map<std::string, GivenInput> given = read_given_inputs(
      args.count("input") ? args["input"].as<std::vector<std::string>>() : std::vector<std::string>{}, m.graph, cfg.batch);
  // Inputs bound at build time (--shape-input, or a plan's) run with the bound value, in
  // both executors, unless --input gives one (which the engine then checks against it).
  for (const GraphInput& in : m.graph.inputs)
    if (auto bound = cfg.constant_inputs.find(in.name); bound != cfg.constant_inputs.end() && !given.count(in.name))
      given[in.name] = GivenInput{"bound at build time", as_declared(in, bound->second)};
  // The engine bakes a shape input's value in at build time: a seeded one would decide the
  // model's shapes at random, so it must be given.
  if (executor == "engine")
    for (const ShapeInputUse& use : find_shape_inputs(m.graph))
      if (!given.count(use.input))
        throw Error(m.reference + ": input '" + use.input + "' " + shape_use_str(use) +
                    ": the engine binds its value at build time; give it with --input " + use.input +
                    "=FILE or --shape-input " + use.input + "=V[,V...]");
  // A plan's input shapes were fixed when it was built: the engine checks given inputs against them.
  if (!m.plan)
    for (const auto& [name, in] : given)
      if (!cfg.constant_inputs.count(name)) cfg.input_shapes[name] = in.tensor.shape();
  const std::vector<Tensor> inputs = naming_model(m, [&] {
    const std::map<std::string, Shape> shapes = bind_input_shapes(m.graph, cfg.batch, cfg.input_shapes);
    return assemble_inputs(m.graph, given, shapes, args["seed"].as<uint64_t>());
  });

  std::vector<std::string> output_names, build_notes;
  std::vector<Tensor> outputs;
  ThreadScope threads(cfg.threads);
  threads.run([&] {
    if (executor == "engine" && cfg.is_dynamic()) {
      // Built for opt, then specialized for the given inputs' shapes if they differ.
      DynamicEngine dynamic = naming_model(m, [&] { return DynamicEngine(m.graph, cfg); });
      naming_model(m, [&] { dynamic.run(unbound_inputs(m.graph, inputs, cfg.constant_inputs)); });
      for (const std::string& line : dynamic.build_log())
        if (line.rfind("optimization profile: ", 0) == 0 || line.rfind("specialized for ", 0) == 0) build_notes.push_back(line);
      output_names = m.graph.outputs;
      for (const Tensor& t : dynamic.outputs()) outputs.push_back(t.clone());
    } else if (executor == "engine") {
      // Inputs that feed shapes are bound at build time from the values given (the build
      // log says which); the engine runs on the others.
      EngineExec run = naming_model(
          m, [&] { return exec_engine(m.graph, cfg, inputs, [&](const BuildConfig& c) { return make_engine(m, c); }); });
      for (const std::string& line : run.engine->build_log())
        if (line.rfind("bound ", 0) == 0 || line.rfind("eager region: ", 0) == 0) build_notes.push_back(line);
      // Under mark-all every tensor the engine computed, in layer order (the "mark all
      // outputs" comparison of each layer with another runtime); else the graph outputs.
      for (auto& [name, t] : run.kept) {
        output_names.push_back(name);
        outputs.push_back(std::move(t));
      }
    } else {
      naming_model(m, [&] { run_reference(m, cfg, inputs, &output_names, &outputs); });
    }
  });

  std::printf("%s  %s, %s, %d thread(s)\n", m.reference.c_str(),
              executor == "engine" ? ("engine, fusion " + std::string(fusion_level_name(cfg.fusion))).c_str() : "reference executor",
              batch_label(m.graph, cfg.batch).c_str(), cfg.threads);
  for (const std::string& line : build_notes) std::printf("%s\n", line.c_str());
  std::vector<std::string> input_names_v;
  for (const GraphInput& in : m.graph.inputs) input_names_v.push_back(in.name);
  std::vector<std::string> input_paths, output_paths;
  if (args.count("save-inputs")) input_paths = save_all(args["save-inputs"].as<std::string>(), input_names_v, inputs);
  if (args.count("save-outputs")) output_paths = save_all(args["save-outputs"].as<std::string>(), output_names, outputs);
  for (size_t i = 0; i < inputs.size(); ++i) {
    auto it = given.find(input_names_v[i]);
    std::printf("input  %s  %s%s  %s  (%s)%s\n", input_names_v[i].c_str(), dtype_name(inputs[i].dtype()).c_str(),
                shape_str(inputs[i].shape()).c_str(), describe_values(inputs[i]).c_str(),
                it != given.end() ? it->second.file.c_str() : ("seed " + std::to_string(args["seed"].as<uint64_t>())).c_str(),
                input_paths.empty() ? "" : ("  -> " + input_paths[i]).c_str());
  }
  for (size_t i = 0; i < outputs.size(); ++i)
    std::printf("output %s  %s%s  %s%s\n", output_names[i].c_str(), dtype_name(outputs[i].dtype()).c_str(),
                shape_str(outputs[i].shape()).c_str(), describe_values(outputs[i]).c_str(),
                output_paths.empty() ? "" : ("  -> " + output_paths[i]).c_str());
  return kExitOk;
}

}  // namespace fb::cli
