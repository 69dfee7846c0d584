#include "harness/cases/calibration.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>

#include "engine/reference/reference_executor.h"
#include "harness/cases/inputs.h"
#include "harness/cases/tensor_file.h"
#include "harness/util/atomic_file.h"

namespace fb {

namespace {

constexpr const char* kCacheFormat = "fusebench-calibration";

// Everything the ranges depend on.
nlohmann::json calibration_key(const LoadedModel& m, const Graph& graph, const BuildConfig& cfg) {
  const Int8Calibration& c = cfg.calibration;
  nlohmann::json shapes = nlohmann::json::object();
  for (const auto& [name, shape] : cfg.input_shapes) shapes[name] = shape;
  return {{"algorithm", kCalibrationAlgorithmVersion}, {"model_hash", m.hash},          {"graph_nodes", graph.nodes.size()}, {"method", c.method},
          {"percentile", c.percentile},    {"batches", c.batches},              {"seed", c.seed},
          {"data", c.data},                {"batch", cfg.batch},                {"input_shapes", shapes}};
}

// The calibration batch `i`: the data files' tensors, or seeded random inputs.
std::vector<Tensor> calibration_inputs(const Graph& g, const ReferenceExecutor& ref, const BuildConfig& cfg, size_t i) {
  const Int8Calibration& c = cfg.calibration;
  std::vector<Tensor> inputs;
  if (c.data.empty()) {
    inputs = make_inputs(g, ref.input_shapes(), c.seed + i);
  } else {
    const auto& files = c.data[i];
    for (size_t k = 0; k < g.inputs.size(); ++k) {
      const std::string& name = g.inputs[k].name;
      auto f = files.find(name);
      if (f == files.end())
        throw Error("calibration.data[" + std::to_string(i) + "]: no file for the graph input '" + name + "'");
      Tensor t = read_tensor_file(f->second);
      if (t.shape() != ref.input_shapes()[k] || t.dtype() != g.value(name).dtype)
        throw Error(f->second + ": calibration input '" + name + "' is " + dtype_name(t.dtype()) + " " +
                    shape_str(t.shape()) + ", the model takes " + dtype_name(g.value(name).dtype) + " " +
                    shape_str(ref.input_shapes()[k]) + " at batch " + std::to_string(cfg.batch));
      inputs.push_back(std::move(t));
    }
    for (const auto& [name, _] : files)
      if (std::none_of(g.inputs.begin(), g.inputs.end(), [&name = name](const GraphInput& in) { return in.name == name; }))
        throw Error("calibration.data[" + std::to_string(i) + "]: '" + name + "' is not a graph input");
  }
  for (size_t k = 0; k < g.inputs.size(); ++k)  // shape tensors bound at build time keep their values
    if (auto bound = cfg.constant_inputs.find(g.inputs[k].name); bound != cfg.constant_inputs.end()) inputs[k] = bound->second.clone();
  return inputs;
}

std::map<std::string, TensorRange> run_calibration(const Graph& graph, const BuildConfig& cfg,
                                                   std::shared_ptr<const OpRegistry> ops) {
  const Int8Calibration& c = cfg.calibration;
  if (c.data.empty() && c.batches < 1) throw Error("calibration.batches must be at least 1");
  const ReferenceExecutor ref(graph, cfg.batch, cfg.input_shapes, ops);
  Calibrator calibrator(parse_calibration_method(c.method), c.percentile);
  // Only what an int8 layer can quantize: the data input of a matrix product or a
  // convolution (fusion keeps these names: a fused layer reads its first node's input),
  // what a fused activation reads, and both operands of a MatMul traced back through the views that split heads to the
  // tensors an attention layer reads (q, k and v as the projections write them).
  std::set<std::string> wanted;
  std::map<std::string, const Node*> producer;
  std::map<std::string, std::vector<const Node*>> readers;
  for (const Node& n : graph.nodes) {
    for (const std::string& o : n.outputs) producer[o] = &n;
    for (const std::string& in : n.inputs) readers[in].push_back(&n);
  }
  // The head split an attention layer absorbs: Transpose copies, so the op table's
  // aliasing views (OpDef::alias_input0) are not the set.
  auto is_view = [](const Node& n) {
    return n.domain.empty() && (n.op_type == "Reshape" || n.op_type == "Transpose" || n.op_type == "Squeeze" ||
                                n.op_type == "Unsqueeze" || n.op_type == "Flatten");
  };
  for (const Node& n : graph.nodes) {
    if (!n.domain.empty() || n.inputs.empty()) continue;
    if (n.op_type == "MatMul" || n.op_type == "Gemm" || n.op_type == "Conv") wanted.insert(n.inputs[0]);
    // A matrix product's output with its bias: what an activation fused into an int8
    // product reads (its table's input, engine/backend/cpu/int8_matmul.h).
    if (n.op_type == "Gemm") wanted.insert(n.outputs[0]);
    // A convolution's output, or a BatchNormalization's folded into it, that a costly
    // activation reads (Sigmoid, SiLU's Sigmoid and Mul, GELU's Div or Mul by sqrt 2): an
    // int8 convolution's table input (as above). A ReLU's or Clip's input is not needed.
    // What a squeeze-excite pool reads: an int8 convolution writes it quantized when only
    // the pool and the channel gate read it (engine/passes/int8_lowering.cpp).
    if (n.op_type == "GlobalAveragePool" || n.op_type == "ReduceMean") wanted.insert(n.inputs[0]);
    if (n.op_type == "Conv" || n.op_type == "BatchNormalization")
      for (const Node* r : readers[n.outputs[0]])
        if (r->domain.empty() && (r->op_type == "Sigmoid" || r->op_type == "Mul" || r->op_type == "Div" || r->op_type == "Gelu"))
          wanted.insert(n.outputs[0]);
    if (n.op_type == "Add")
      for (const std::string& in : n.inputs)
        if (producer.count(in) && producer[in]->domain.empty() && producer[in]->op_type == "MatMul") wanted.insert(n.outputs[0]);
    if (n.op_type != "MatMul") continue;
    for (std::string v : {n.inputs[0], n.inputs.size() > 1 ? n.inputs[1] : std::string()}) {
      for (int hops = 0; hops < 8 && producer.count(v) && is_view(*producer[v]); ++hops) v = producer[v]->inputs[0];
      if (!v.empty()) wanted.insert(v);
    }
  }
  const size_t batches = c.data.empty() ? size_t(c.batches) : c.data.size();
  for (int pass = 0; pass < (calibrator.wants_second_pass() ? 2 : 1); ++pass)
    for (size_t i = 0; i < batches; ++i)
      for (const auto& [name, t] : ref.run_all(calibration_inputs(graph, ref, cfg, i))) {
        if (t.dtype() != DType::Float32 || t.numel() == 0 || !wanted.count(name)) continue;
        if (pass == 0) calibrator.observe_range(name, t.data<float>(), size_t(t.numel()));
        else calibrator.observe_histogram(name, t.data<float>(), size_t(t.numel()));
      }
  return calibrator.ranges();
}

}  // namespace

namespace {

// The file's entries; empty when there is no file. An Error names a damaged one.
nlohmann::json cache_entries(const std::string& path) {
  std::ifstream in(path);
  if (!in) return nlohmann::json::array();
  try {
    const nlohmann::json j = nlohmann::json::parse(in);
    if (j.at("format") != kCacheFormat || j.at("version") != 2) throw Error("not a fusebench calibration cache (version 2)");
    const nlohmann::json& entries = j.at("entries");
    if (!entries.is_array()) throw Error("'entries' is not a list");
    return entries;
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": damaged calibration cache (" + e.what() + "); delete it to recalibrate");
  } catch (const Error& e) {
    throw Error(path + ": " + e.what() + "; delete it to recalibrate");
  }
}

}  // namespace

std::optional<std::map<std::string, TensorRange>> read_calibration_cache(const std::string& path, const nlohmann::json& key) {
  for (const nlohmann::json& entry : cache_entries(path)) {
    if (!entry.is_object() || !entry.contains("key") || entry["key"] != key) continue;
    try {
      std::map<std::string, TensorRange> ranges;
      for (const auto& [name, r] : entry.at("tensors").items())
        ranges[name] = TensorRange{r.at("min").get<float>(), r.at("max").get<float>(), r.at("amax").get<float>()};
      return ranges;
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ": damaged calibration cache entry (" + e.what() + "); delete it to recalibrate");
    }
  }
  return std::nullopt;
}

void add_to_calibration_cache(const std::string& path, const nlohmann::json& key, const std::map<std::string, TensorRange>& ranges) {
  nlohmann::json tensors = nlohmann::json::object();
  for (const auto& [name, r] : ranges) tensors[name] = {{"min", r.min}, {"max", r.max}, {"amax", r.amax}};
  nlohmann::json entries = nlohmann::json::array();
  for (nlohmann::json& e : cache_entries(path))
    if (!(e.is_object() && e.contains("key") && e["key"] == key)) entries.push_back(std::move(e));
  entries.push_back({{"key", key}, {"tensors", tensors}});
  const std::filesystem::path p(path);
  std::error_code ec;
  if (p.has_parent_path()) std::filesystem::create_directories(p.parent_path(), ec);
  // Whole or not at all; workers may write at once.
  write_file_atomically(path, nlohmann::json{{"format", kCacheFormat}, {"version", 2}, {"entries", entries}}.dump(1) + "\n",
                        "the calibration cache");
}

void calibrate_for_int8(const LoadedModel& m, const Graph& graph, BuildConfig& cfg, std::shared_ptr<const OpRegistry> ops) {
  if (!cfg.asks_for_int8() || !cfg.int8_ranges.empty() || m.plan) return;
  parse_calibration_method(cfg.calibration.method);  // a wrong name fails before any work
  const nlohmann::json key = calibration_key(m, graph, cfg);
  static std::mutex mutex;
  static std::map<std::string, std::pair<std::map<std::string, TensorRange>, std::string>> computed;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key_text = key.dump();
  if (auto it = computed.find(key_text); it != computed.end()) {
    cfg.int8_ranges = it->second.first;
    cfg.int8_ranges_from = it->second.second;
    return;
  }
  const Int8Calibration& c = cfg.calibration;
  std::string from;
  if (!c.cache.empty())
    if (auto cached = read_calibration_cache(c.cache, key)) {
      cfg.int8_ranges = std::move(*cached);
      from = "the cache " + c.cache;
    }
  if (from.empty()) {
    const auto t0 = std::chrono::steady_clock::now();
    cfg.int8_ranges = run_calibration(graph, cfg, ops);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    char took[32];
    std::snprintf(took, sizeof took, "%.2f s", s);
    from = c.data.empty() ? std::to_string(c.batches) + " seeded batches (seed " + std::to_string(c.seed) + ", " + took + ")"
                          : std::to_string(c.data.size()) + " batches of data files (" + took + ")";
    if (!c.cache.empty()) {
      add_to_calibration_cache(c.cache, key, cfg.int8_ranges);
      from += ", written to the cache " + c.cache;
    }
  }
  cfg.int8_ranges_from = from;
  computed[key_text] = {cfg.int8_ranges, from};
}

}  // namespace fb
