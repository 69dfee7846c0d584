// What a build is asked for: precision, fusion level and its limits, batch, threads, device.
// The builder, the passes, the runtime and plans all read it, so it sits below them all
// (engine/config: may use ir, quant).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/ir/precision.h"
#include "engine/ir/tensor.h"
#include "engine/quant/calibrator.h"

namespace fb {

// none: one layer per ONNX node. mark-all: the same, with every tensor kept as an output
// (the fair PyTorch comparison polygraphy users get by marking all outputs). standard:
// the named patterns. aggressive: standard plus attention (engine/passes/pipeline.cpp).
enum class FusionLevel { None, MarkAll, Standard, Aggressive };
// Throws Error listing the levels, after `what` (a field or flag) when given.
FusionLevel parse_fusion_level(const std::string& s, const std::string& what = "");
const char* fusion_level_name(FusionLevel l);

// What a per-layer precision constraint does when the engine cannot honour it. obey: the
// build fails naming the layer; prefer: the layer falls back and the build log says why.
enum class PrecisionMode { Prefer, Obey };
PrecisionMode parse_precision_mode(const std::string& s);  // throws Error listing the modes
const char* precision_mode_name(PrecisionMode m);

// A per-layer override: `pattern` is an ONNX node-name glob ('*', '?') or an op type
// ("Softmax"); the first constraint in the list that matches a node decides its precision.
struct LayerPrecision {
  std::string pattern;
  Precision precision = Precision::FP32;
  bool operator==(const LayerPrecision&) const = default;
};
// "PATTERN=PRECISION" as the command line writes it; throws Error naming the flag.
LayerPrecision parse_layer_precision(const std::string& s);

// How an int8 build finds its activation ranges (engine/quant/calibrator.h): the harness
// runs the fp32 reference over the calibration set and fills BuildConfig::int8_ranges.
struct Int8Calibration {
  std::string method = "entropy";  // minmax, percentile, entropy
  double percentile = kDefaultCalibrationPercentile;
  int batches = 8;                 // seeded random batches, when no data files are given
  uint64_t seed = 7;               // not the timed inputs' seed: calibrate on other data
  // Data files: one entry per batch, each naming a .npy or .pb file per graph input.
  std::vector<std::map<std::string, std::string>> data;
  std::string cache;               // calibration cache file ("" for none), keyed by model hash
  bool operator==(const Int8Calibration&) const = default;
};

// One graph input's range in an optimization profile (TensorRT's): the least and largest
// shape a dynamic engine accepts, and the shape it is built for first.
struct ShapeRange {
  Shape min, opt, max;
  bool operator==(const ShapeRange&) const = default;
};

// The same for the batch dimension of every graph input whose batch the model leaves
// symbolic. max == 0: not set.
struct BatchRange {
  int64_t min = 0, opt = 0, max = 0;
  bool empty() const { return max == 0; }
  bool operator==(const BatchRange&) const = default;
};

struct BuildConfig {
  Precision precision = Precision::FP32;  // every layer's, unless a constraint says otherwise
  std::vector<LayerPrecision> layer_precisions;
  PrecisionMode precision_mode = PrecisionMode::Prefer;
  FusionLevel fusion = FusionLevel::Standard;
  int64_t batch = 1;
  int threads = 1;
  // Where the layers run: "cpu", "cuda" (device 0) or "cuda:N" (engine/backend/backend.h).
  std::string device = "cpu";
  std::vector<std::string> exclude_nodes;     // node-name globs fusion leaves alone
  std::vector<std::string> exclude_op_types;  // op types fusion leaves alone
  std::vector<std::string> partition_points;  // tensor names fusion may not cross
  // In-place arena reuse: an in-place kernel's output may take over an input buffer that
  // dies at that layer (engine/runtime/arena_planner.h). Off only to compare plans.
  bool in_place = true;
  // float32 3x3 convolutions may run on oneDNN's Winograd kernels where they pay
  // (engine/backend/cpu/conv.cpp: winograd_pays). Their results differ from direct
  // convolution by float rounding, which can flip a decision on a threshold (a detector's
  // box); off, every convolution is direct, as the reference executor's always are.
  bool winograd = true;
  // A device engine records its whole plan once as a CUDA graph (after its first run, when
  // every layer has made what it makes lazily) and replays it as one launch per run
  // (engine/runtime/engine.h). Refused for a plan with layers on the host (a CPU fallback);
  // ignored on the CPU. The reference always stays eager, as PyTorch eager is.
  bool cuda_graph = false;
  // A device engine times the library's candidate algorithms for each convolution (cuDNN's
  // graph API plans) and matrix product (cuBLASLt) on the layer's own buffers at build and
  // keeps the fastest by what the engine will pay (TensorRT's tactic timing): with
  // cuda_graph, the GPU's time of each replayed alone in a graph; eager, back-to-back calls,
  // host launch cost included. Off: the heuristic's first, as PyTorch's default and the GPU
  // reference. Ignored on the CPU.
  bool time_algorithms = true;
  // Shapes for graph inputs whose dims the model leaves symbolic beyond the batch (or to
  // override them); by input name.
  std::map<std::string, Shape> input_shapes;
  // Graph inputs bound to fixed values at build time (shape tensors, like TensorRT's):
  // they become initializers and the engine no longer takes them as inputs.
  std::map<std::string, Tensor> constant_inputs;
  // A dynamic engine's optimization profile (engine/builder/dynamic_engine.h): ranges by
  // graph input, and/or a range for the batch. Both empty: a static engine, built for
  // `batch` and `input_shapes`. build_engine builds static engines only.
  std::map<std::string, ShapeRange> shape_profile;
  BatchRange dynamic_batch;
  bool is_dynamic() const { return !shape_profile.empty() || !dynamic_batch.empty(); }
  Int8Calibration calibration;
  // What calibration found, by tensor name: the builder gives each int8 layer its input's
  // threshold (as node attributes, so a plan carries them). A result, not a setting: the
  // plan format leaves it out.
  std::map<std::string, TensorRange> int8_ranges;
  std::string int8_ranges_from;  // for the build log: "8 seeded batches (seed 7)", "cache FILE"
  // Whether any layer may run in int8 (the build precision or a layer constraint).
  bool asks_for_int8() const;
};

}  // namespace fb
