// Building ONNX graphs in code for the zoo: weight generation, exporter-style naming, and the
// layers the zoo models share.
#include "engine/zoo/onnx_builder.h"

#include <bit>
#include <cmath>
#include <limits>

#include "engine/ir/error.h"

namespace fb::zoo {

namespace {

// 1.5 GiB of fp32: room for BERT-large sizes, but under protobuf's 2 GiB message limit, past
// which a model cannot be serialized. Refusing before allocating keeps a typo in a scenario
// from exhausting memory.
constexpr int64_t kMaxElements = int64_t{384} << 20;

void append_le(std::string& out, uint32_t bits) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}
void append_le(std::string& out, uint64_t bits) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

}  // namespace

uint64_t hash64(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ULL;
  }
  return h;
}

uint64_t SplitMix64::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

float SplitMix64::uniform(float lo, float hi) {
  double u = static_cast<double>(next() >> 40) * (1.0 / 16777216.0);
  return static_cast<float>(lo + (static_cast<double>(hi) - lo) * u);
}

Attr attr_int(std::string name, int64_t value) {
  Attr a;
  a.name = std::move(name);
  a.kind = Attr::Kind::Int;
  a.i = value;
  return a;
}

Attr attr_float(std::string name, float value) {
  Attr a;
  a.name = std::move(name);
  a.kind = Attr::Kind::Float;
  a.f = value;
  return a;
}

Attr attr_ints(std::string name, std::vector<int64_t> values) {
  Attr a;
  a.name = std::move(name);
  a.kind = Attr::Kind::Ints;
  a.ints = std::move(values);
  return a;
}

Attr attr_string(std::string name, std::string value) {
  Attr a;
  a.name = std::move(name);
  a.kind = Attr::Kind::String;
  a.s = std::move(value);
  return a;
}

OnnxBuilder::OnnxBuilder(std::string model_name, std::string spec)
    : model_name_(std::move(model_name)), spec_(std::move(spec)) {
  model_.set_ir_version(kIrVersion);
  // No version here: the model's bytes (and so its content hash) must not change when only
  // fusebench's version does.
  model_.set_producer_name("fusebench-zoo");
  model_.set_doc_string(spec_);
  auto* opset = model_.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  model_.mutable_graph()->set_name(model_name_);
  auto* meta = model_.add_metadata_props();
  meta->set_key("zoo_spec");
  meta->set_value(spec_);
}

void OnnxBuilder::set_tensor_type(onnx::ValueInfoProto* vi, const std::vector<int64_t>& dims) {
  auto* tensor = vi->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto_DataType_FLOAT);
  auto* shape = tensor->mutable_shape();
  for (int64_t d : dims) {
    auto* dim = shape->add_dim();
    if (d == kBatch)
      dim->set_dim_param("batch");
    else
      dim->set_dim_value(d);
  }
}

std::string OnnxBuilder::input(const std::string& name, const std::vector<int64_t>& dims) {
  FB_CHECK(names_.insert(name).second, "duplicate name " + name);
  auto* vi = model_.mutable_graph()->add_input();
  vi->set_name(name);
  set_tensor_type(vi, dims);
  return name;
}

void OnnxBuilder::output(const std::string& value, const std::string& name,
                         const std::vector<int64_t>& dims) {
  FB_CHECK(names_.insert(name).second, "duplicate name " + name);
  for (auto& n : *model_.mutable_graph()->mutable_node()) {
    for (auto& in : *n.mutable_input())
      if (in == value) in = name;
    for (auto& out : *n.mutable_output())
      if (out == value) out = name;
  }
  auto* vi = model_.mutable_graph()->add_output();
  vi->set_name(name);
  set_tensor_type(vi, dims);
}

onnx::TensorProto* OnnxBuilder::new_initializer(const std::string& name,
                                                const std::vector<int64_t>& dims,
                                                int32_t elem_type) {
  FB_CHECK(names_.insert(name).second, "duplicate initializer name " + name);
  int64_t count = 1;
  for (int64_t d : dims) {
    FB_CHECK(d > 0, "non-positive dim in initializer " + name);
    if (count > kMaxElements / d) count = kMaxElements + 1;
    else count *= d;
  }
  if (count > kMaxElements || total_elements_ + count > kMaxElements)
    throw Error("zoo model '" + spec_ + "' would have more than " + std::to_string(kMaxElements) +
                " weights (at '" + name + "'); choose smaller parameters");
  total_elements_ += count;
  auto* t = model_.mutable_graph()->add_initializer();
  t->set_name(name);
  t->set_data_type(elem_type);
  for (int64_t d : dims) t->add_dims(d);
  return t;
}

std::string OnnxBuilder::weight(const std::string& name, const std::vector<int64_t>& dims,
                                float spread, float center) {
  auto* t = new_initializer(name, dims, onnx::TensorProto_DataType_FLOAT);
  int64_t count = 1;
  for (int64_t d : dims) count *= d;
  SplitMix64 rng(hash64(spec_) ^ hash64(name));
  std::string raw(static_cast<size_t>(count) * 4, '\0');
  for (int64_t i = 0; i < count; ++i) {
    const uint32_t bits = std::bit_cast<uint32_t>(rng.uniform(center - spread, center + spread));
    for (int k = 0; k < 4; ++k) raw[4 * i + k] = static_cast<char>((bits >> (8 * k)) & 0xff);
  }
  t->set_raw_data(std::move(raw));
  return name;
}

std::string OnnxBuilder::shared_constant(const std::string& name, char kind, const std::string& raw,
                                         const std::vector<int64_t>& dims, int32_t elem_type) {
  auto it = constants_.find(name);
  if (it != constants_.end()) {
    FB_CHECK(it->second == std::string(1, kind) + raw, "constant " + name + " asked for with two values");
    return name;
  }
  constants_[name] = std::string(1, kind) + raw;
  new_initializer(name, dims, elem_type)->set_raw_data(raw);
  return name;
}

std::string OnnxBuilder::scalar(const std::string& name, float value) {
  std::string raw;
  append_le(raw, std::bit_cast<uint32_t>(value));
  return shared_constant(name, 'f', raw, {}, onnx::TensorProto_DataType_FLOAT);
}

std::string OnnxBuilder::floats(const std::string& name, const std::vector<float>& values) {
  std::string raw;
  for (float v : values) append_le(raw, std::bit_cast<uint32_t>(v));
  return shared_constant(name, 'F', raw, {static_cast<int64_t>(values.size())}, onnx::TensorProto_DataType_FLOAT);
}

std::string OnnxBuilder::ints(const std::string& name, const std::vector<int64_t>& values) {
  std::string raw;
  for (int64_t v : values) append_le(raw, static_cast<uint64_t>(v));
  return shared_constant(name, 'i', raw, {static_cast<int64_t>(values.size())}, onnx::TensorProto_DataType_INT64);
}

std::string OnnxBuilder::node(const std::string& scope, const std::string& op,
                              const std::vector<std::string>& inputs,
                              const std::vector<Attr>& attrs) {
  return node_outputs(scope, op, inputs, 1, attrs)[0];
}

std::vector<std::string> OnnxBuilder::node_outputs(const std::string& scope, const std::string& op,
                                                   const std::vector<std::string>& inputs, int outputs,
                                                   const std::vector<Attr>& attrs) {
  int& count = op_counts_[{scope, op}];
  std::string name = scope + "/" + op + (count > 0 ? "_" + std::to_string(count) : "");
  ++count;
  FB_CHECK(names_.insert(name).second, "duplicate node name " + name);
  auto* n = model_.mutable_graph()->add_node();
  n->set_name(name);
  n->set_op_type(op);
  for (const auto& in : inputs) n->add_input(in);
  std::vector<std::string> outs;
  for (int i = 0; i < outputs; ++i) {
    outs.push_back(name + "_output_" + std::to_string(i));
    n->add_output(outs.back());
  }
  for (const auto& a : attrs) {
    auto* p = n->add_attribute();
    p->set_name(a.name);
    switch (a.kind) {
      case Attr::Kind::Int:
        p->set_type(onnx::AttributeProto_AttributeType_INT);
        p->set_i(a.i);
        break;
      case Attr::Kind::Float:
        p->set_type(onnx::AttributeProto_AttributeType_FLOAT);
        p->set_f(a.f);
        break;
      case Attr::Kind::Ints:
        p->set_type(onnx::AttributeProto_AttributeType_INTS);
        for (int64_t v : a.ints) p->add_ints(v);
        break;
      case Attr::Kind::String:
        p->set_type(onnx::AttributeProto_AttributeType_STRING);
        p->set_s(a.s);
        break;
    }
  }
  return outs;
}

onnx::ModelProto OnnxBuilder::finish() { return std::move(model_); }

std::string scope(const std::string& parent, const std::string& child) {
  return parent + "/" + child;
}

std::string param_name(const std::string& prefix, const std::string& child) {
  return prefix.empty() ? child : prefix + "." + child;
}

float bound(float gain, int64_t fan_in) {
  return gain * static_cast<float>(std::sqrt(3.0 / static_cast<double>(fan_in)));
}

float bias_bound(int64_t fan_in) {
  return static_cast<float>(1.0 / std::sqrt(static_cast<double>(fan_in)));
}

std::string linear(OnnxBuilder& b, const std::string& sc, const std::string& prefix,
                   const std::string& x, int64_t in, int64_t out, float gain) {
  auto w = b.weight(param_name(prefix, "weight"), {in, out}, bound(gain, in));
  auto bias = b.weight(param_name(prefix, "bias"), {out}, bias_bound(in));
  auto y = b.node(sc, "MatMul", {x, w});
  return b.node(sc, "Add", {bias, y});
}

std::string linear_gemm(OnnxBuilder& b, const std::string& sc, const std::string& prefix,
                        const std::string& x, int64_t in, int64_t out, float gain) {
  auto w = b.weight(param_name(prefix, "weight"), {out, in}, bound(gain, in));
  auto bias = b.weight(param_name(prefix, "bias"), {out}, bias_bound(in));
  return b.node(sc, "Gemm", {x, w, bias},
                {attr_float("alpha", 1.0f), attr_float("beta", 1.0f), attr_int("transB", 1)});
}

std::string layer_norm(OnnxBuilder& b, const std::string& sc, const std::string& prefix,
                       const std::string& x, int64_t dim, float eps) {
  // Near-identity affine parameters that are still not exactly 1 and 0, so a kernel that
  // drops them is caught by the accuracy check.
  auto gamma = b.weight(param_name(prefix, "weight"), {dim}, 0.1f, 1.0f);
  auto beta = b.weight(param_name(prefix, "bias"), {dim}, 0.1f);
  std::vector<Attr> last_axis = {attr_ints("axes", {-1})};
  auto mean = b.node(sc, "ReduceMean", {x}, last_axis);
  auto centered = b.node(sc, "Sub", {x, mean});
  auto sq = b.node(sc, "Pow", {centered, b.scalar("const.two", 2.0f)});
  auto var = b.node(sc, "ReduceMean", {sq}, last_axis);
  auto var_eps = b.node(sc, "Add", {var, b.scalar("const.layer_norm_eps", eps)});
  auto stddev = b.node(sc, "Sqrt", {var_eps});
  auto normed = b.node(sc, "Div", {centered, stddev});
  auto scaled = b.node(sc, "Mul", {normed, gamma});
  return b.node(sc, "Add", {scaled, beta});
}

std::string rms_norm(OnnxBuilder& b, const std::string& sc, const std::string& prefix, const std::string& x, int64_t dim,
                     float eps) {
  auto gamma = b.weight(param_name(prefix, "weight"), {dim}, 0.1f, 1.0f);
  auto sq = b.node(sc, "Pow", {x, b.scalar("const.two", 2.0f)});
  auto ms = b.node(sc, "ReduceMean", {sq}, {attr_ints("axes", {-1})});
  auto ms_eps = b.node(sc, "Add", {ms, b.scalar("const.rms_norm_eps", eps)});
  auto rms = b.node(sc, "Sqrt", {ms_eps});
  auto normed = b.node(sc, "Div", {x, rms});
  return b.node(sc, "Mul", {normed, gamma});
}

std::string gelu(OnnxBuilder& b, const std::string& sc, const std::string& x) {
  auto d = b.node(sc, "Div", {x, b.scalar("const.sqrt_two", 1.4142135f)});
  auto e = b.node(sc, "Erf", {d});
  auto p = b.node(sc, "Add", {e, b.scalar("const.one", 1.0f)});
  auto m = b.node(sc, "Mul", {x, p});
  return b.node(sc, "Mul", {m, b.scalar("const.half", 0.5f)});
}

std::string self_attention(OnnxBuilder& b, const std::string& sc, const std::string& prefix,
                           const std::string& x, int64_t hidden, int64_t heads) {
  const int64_t head_dim = hidden / heads;
  // 0 copies the input's dim, so one constant serves every batch size and sequence length.
  auto split = b.ints("const.split_heads_shape", {0, 0, heads, head_dim});
  auto merge = b.ints("const.merge_heads_shape", {0, 0, hidden});
  auto q = linear(b, scope(sc, "query"), param_name(prefix, "query"), x, hidden, hidden);
  auto k = linear(b, scope(sc, "key"), param_name(prefix, "key"), x, hidden, hidden);
  auto v = linear(b, scope(sc, "value"), param_name(prefix, "value"), x, hidden, hidden);
  auto qh = b.node(sc, "Transpose", {b.node(sc, "Reshape", {q, split})},
                   {attr_ints("perm", {0, 2, 1, 3})});
  // K goes straight to [batch, heads, head_dim, seq], as the exporter folds k.transpose(-1,-2).
  auto kt = b.node(sc, "Transpose", {b.node(sc, "Reshape", {k, split})},
                   {attr_ints("perm", {0, 2, 3, 1})});
  auto vh = b.node(sc, "Transpose", {b.node(sc, "Reshape", {v, split})},
                   {attr_ints("perm", {0, 2, 1, 3})});
  auto scores = b.node(sc, "MatMul", {qh, kt});
  auto scaled = b.node(sc, "Div", {scores, b.scalar("const.attention_scale",
                                                    static_cast<float>(std::sqrt(head_dim)))});
  auto probs = b.node(sc, "Softmax", {scaled}, {attr_int("axis", -1)});
  auto context = b.node(sc, "MatMul", {probs, vh});
  auto merged = b.node(sc, "Transpose", {context}, {attr_ints("perm", {0, 2, 1, 3})});
  return b.node(sc, "Reshape", {merged, merge});
}

std::string conv2d(OnnxBuilder& b, const std::string& sc, const std::string& prefix,
                   const std::string& x, int64_t cin, int64_t cout, int64_t kernel, int64_t stride,
                   int64_t pad, int64_t groups, bool bias, float gain) {
  const int64_t fan_in = cin / groups * kernel * kernel;
  std::vector<std::string> inputs = {
      x, b.weight(param_name(prefix, "weight"), {cout, cin / groups, kernel, kernel},
                  bound(gain, fan_in))};
  if (bias) inputs.push_back(b.weight(param_name(prefix, "bias"), {cout}, bias_bound(fan_in)));
  return b.node(sc, "Conv", inputs,
                {attr_ints("dilations", {1, 1}), attr_int("group", groups),
                 attr_ints("kernel_shape", {kernel, kernel}), attr_ints("pads", {pad, pad, pad, pad}),
                 attr_ints("strides", {stride, stride})});
}

std::string batch_norm(OnnxBuilder& b, const std::string& sc, const std::string& prefix,
                       const std::string& x, int64_t channels, float scale) {
  auto gamma = b.weight(param_name(prefix, "weight"), {channels}, 0.1f, scale);
  auto beta = b.weight(param_name(prefix, "bias"), {channels}, 0.1f);
  auto mean = b.weight(param_name(prefix, "running_mean"), {channels}, 0.1f);
  // Variance in [0.5, 1.5): positive, and far enough from 1 that folding BN into the conv
  // wrongly (or not at all) changes the numbers.
  auto var = b.weight(param_name(prefix, "running_var"), {channels}, 0.5f, 1.0f);
  return b.node(sc, "BatchNormalization", {x, gamma, beta, mean, var},
                {attr_float("epsilon", 1e-5f), attr_float("momentum", 0.9f)});
}

}  // namespace fb::zoo
