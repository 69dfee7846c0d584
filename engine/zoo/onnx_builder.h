// Building ONNX graphs in code for the zoo: a deterministic weight generator, a graph builder
// that names nodes as the PyTorch exporter does ("/module/path/OpType_N", which the profiler
// rolls time up by), and the layers several zoo models share.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

namespace fb::zoo {

// A graph-input dimension given as kBatch becomes the symbolic dim "batch".
constexpr int64_t kBatch = -1;
constexpr int kOpset = 17;  // the newest opset Debian's libonnx 1.12 knows
constexpr int kIrVersion = 8;

// FNV-1a; seeds weights from text so they are the same on every platform and compiler.
uint64_t hash64(std::string_view text);

// splitmix64: tiny, well mixed, and fully specified (unlike <random>'s distributions).
class SplitMix64 {
 public:
  explicit SplitMix64(uint64_t seed) : state_(seed) {}
  uint64_t next();
  // Uniform in [lo, hi), from the top 24 bits so every step is exact in float.
  float uniform(float lo, float hi);

 private:
  uint64_t state_;
};

struct Attr {
  enum class Kind { Int, Float, Ints, String };
  std::string name;
  Kind kind = Kind::Int;
  int64_t i = 0;
  float f = 0;
  std::vector<int64_t> ints;
  std::string s;
};
Attr attr_int(std::string name, int64_t value);
Attr attr_float(std::string name, float value);
Attr attr_ints(std::string name, std::vector<int64_t> values);
Attr attr_string(std::string name, std::string value);

class OnnxBuilder {
 public:
  // `spec` is the normalized zoo spec: it seeds the weights, names the model in errors and
  // is stored in the model's doc string.
  OnnxBuilder(std::string model_name, std::string spec);

  // A float graph input; returns its value name.
  std::string input(const std::string& name, const std::vector<int64_t>& dims);
  // Makes `value` a float graph output called `name` (renaming the value everywhere).
  void output(const std::string& value, const std::string& name, const std::vector<int64_t>& dims);

  // A float weight uniform in [center - spread, center + spread). Its values are seeded by
  // the spec and its own name, so they do not depend on the order weights are made in.
  std::string weight(const std::string& name, const std::vector<int64_t>& dims, float spread,
                     float center = 0.0f);
  // Constants are initializers too, shared by name (asking again returns the same one).
  std::string scalar(const std::string& name, float value);  // rank 0
  std::string ints(const std::string& name, const std::vector<int64_t>& values);  // 1-D int64
  std::string floats(const std::string& name, const std::vector<float>& values);  // 1-D float

  // Adds node "<scope>/<op>" ("_1", "_2", ... for repeats in one scope, as PyTorch does) with
  // one output "<node name>_output_0"; returns that output.
  std::string node(const std::string& scope, const std::string& op,
                   const std::vector<std::string>& inputs, const std::vector<Attr>& attrs = {});
  // The same for a node with `outputs` outputs ("<node name>_output_0", "_output_1", ...).
  std::vector<std::string> node_outputs(const std::string& scope, const std::string& op,
                                        const std::vector<std::string>& inputs, int outputs,
                                        const std::vector<Attr>& attrs = {});

  onnx::ModelProto finish();

 private:
  // An initializer shared by name: asking again with other contents is a bug.
  std::string shared_constant(const std::string& name, char kind, const std::string& raw, const std::vector<int64_t>& dims,
                              int32_t elem_type);
  onnx::TensorProto* new_initializer(const std::string& name, const std::vector<int64_t>& dims,
                                     int32_t elem_type);
  void set_tensor_type(onnx::ValueInfoProto* vi, const std::vector<int64_t>& dims);

  std::string model_name_;
  std::string spec_;
  onnx::ModelProto model_;
  std::map<std::pair<std::string, std::string>, int> op_counts_;
  std::map<std::string, std::string> constants_;  // name -> serialized content, for sharing
  std::set<std::string> names_;                   // every initializer and node name so far
  int64_t total_elements_ = 0;
};

// Module paths: scope("/encoder", "layer.0") is "/encoder/layer.0"; param_name("encoder",
// "layer.0") is "encoder.layer.0", as in a PyTorch state dict.
std::string scope(const std::string& parent, const std::string& child);
std::string param_name(const std::string& prefix, const std::string& child);

// --- Layers shared by several models, exported as PyTorch exports them. ---
// Weight bounds: `gain` * sqrt(3 / fan_in) keeps the second moment of activations unchanged
// for gain 1, and through a following ReLU for gain sqrt(2) (He), so fp32 values stay O(1)
// however deep the model.
constexpr float kReluGain = 1.41421356f;
float bound(float gain, int64_t fan_in);
// PyTorch's default bias init, U(±1/√fan_in): small next to the weights' contribution.
float bias_bound(int64_t fan_in);

// nn.Linear on an input of rank > 2: MatMul(x, W[in, out]) + Add(bias). The weight is stored
// [in, out], as MatMul wants it.
std::string linear(OnnxBuilder& b, const std::string& scope, const std::string& prefix,
                   const std::string& x, int64_t in, int64_t out, float gain = 1.0f);
// nn.Linear on a 2-D input: Gemm(x, W[out, in], bias, transB=1).
std::string linear_gemm(OnnxBuilder& b, const std::string& scope, const std::string& prefix,
                        const std::string& x, int64_t in, int64_t out, float gain = 1.0f);
// nn.LayerNorm over the last dim, decomposed as PyTorch exports it before opset 17.
std::string layer_norm(OnnxBuilder& b, const std::string& scope, const std::string& prefix,
                       const std::string& x, int64_t dim, float eps = 1e-12f);
// RMSNorm over the last dim (T5's, LLaMA's), decomposed: x / sqrt(mean(x^2) + eps) * weight
// as Pow, ReduceMean, Add, Sqrt, Div, Mul.
std::string rms_norm(OnnxBuilder& b, const std::string& scope, const std::string& prefix, const std::string& x, int64_t dim,
                     float eps = 1e-6f);
// Exact GELU, x * 0.5 * (1 + erf(x / sqrt 2)), in the exporter's Erf form.
std::string gelu(OnnxBuilder& b, const std::string& scope, const std::string& x);
// BERT-style self-attention (query/key/value projections, heads split, softmax(QK^T/sqrt d) V,
// heads merged), without mask, on x [batch, seq, hidden]; returns [batch, seq, hidden].
std::string self_attention(OnnxBuilder& b, const std::string& scope, const std::string& prefix,
                           const std::string& x, int64_t hidden, int64_t heads);
// nn.Conv2d with a square kernel and the same padding on every side.
std::string conv2d(OnnxBuilder& b, const std::string& scope, const std::string& prefix,
                   const std::string& x, int64_t cin, int64_t cout, int64_t kernel, int64_t stride,
                   int64_t pad, int64_t groups, bool bias, float gain);
// nn.BatchNorm2d in eval mode, with running statistics that are not the identity. Its scale
// (gamma) is `scale` give or take 0.1.
std::string batch_norm(OnnxBuilder& b, const std::string& scope, const std::string& prefix,
                       const std::string& x, int64_t channels, float scale = 1.0f);

}  // namespace fb::zoo
