// MatMul/Gemm + bias + activation fusion:
//
//      x ──▶ MatMul(x, W) ──▶ Add(·, b) ──▶ Relu | Gelu | GeluTanh   (Add and activation optional)
//      x ──▶ Gemm(x, W, c) ──▶ Relu | Gelu | GeluTanh
//
// becomes one fusebench.FusedMatMul(x, W, b) with the activation as a oneDNN post-op.
// W must be a 2-D constant and b a constant with N elements; a Gemm is taken only when
// its C is such a vector with beta = 1 (or absent). When alpha != 1 the bias is left
// out, since oneDNN scales after adding it.
#include "engine/passes/passes.h"

namespace fb {

namespace {
bool is_op(const Node& n, const char* domain, const char* op) { return n.domain == domain && n.op_type == op; }

bool bias_vector(const Graph& g, const std::string& v, int64_t n) {
  auto it = g.initializers.find(v);
  if (it == g.initializers.end() || it->second.dtype() != DType::Float32 || it->second.numel() != n) return false;
  return it->second.shape().back() == n;
}
}  // namespace

int matmul_bias_activation_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  const BuildConfig& cfg = ctx.config;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const Node& mm = g.nodes[i];
    const bool is_matmul = is_op(mm, "", "MatMul"), is_gemm = is_op(mm, "", "Gemm");
    if ((!is_matmul && !is_gemm) || !node_fusible(mm, cfg)) continue;
    auto w = g.initializers.find(mm.inputs[1]);
    if (w == g.initializers.end() || w->second.rank() != 2 || w->second.dtype() != DType::Float32) continue;
    if (g.value(mm.inputs[0]).shape.size() < 2) continue;
    const int64_t n = g.value(mm.outputs[0]).shape.back();
    Node f;
    f.name = mm.name;
    f.op_type = "FusedMatMul";
    f.domain = "fusebench";
    f.inputs = {mm.inputs[0], mm.inputs[1]};
    const float alpha = is_gemm ? mm.attr_float("alpha", 1.f) : 1.f;
    if (is_gemm) {
      f.attrs["transA"] = Attribute{mm.attr_int("transA", 0)};
      f.attrs["transB"] = Attribute{mm.attr_int("transB", 0)};
      if (alpha != 1.f) f.attrs["alpha"] = Attribute{alpha};
      const bool has_c = mm.inputs.size() > 2 && !mm.inputs[2].empty();
      if (has_c) {
        if (mm.attr_float("beta", 1.f) != 1.f || alpha != 1.f || !bias_vector(g, mm.inputs[2], n)) continue;
        f.inputs.push_back(mm.inputs[2]);
      }
    }
    std::vector<size_t> idx{i};
    std::string out = mm.outputs[0];
    std::string pattern = mm.op_type;
    // Bias Add (MatMul only; Gemm carries its own).
    if (is_matmul && value_fusible(g, out, cfg)) {
      const int a = single_consumer(g, out);
      const Node& add = g.nodes[size_t(a)];
      if (is_op(add, "", "Add") && node_fusible(add, cfg)) {
        const std::string& other = add.inputs[0] == out ? add.inputs[1] : add.inputs[0];
        if (bias_vector(g, other, n) && g.value(add.outputs[0]).shape == g.value(out).shape) {
          f.inputs.push_back(other);
          idx.push_back(size_t(a));
          out = add.outputs[0];
          pattern += "+Add";
        }
      }
    }
    // Activation.
    if (value_fusible(g, out, cfg)) {
      const int a = single_consumer(g, out);
      const Node& act = g.nodes[size_t(a)];
      const char* kind = is_op(act, "", "Relu")                ? "relu"
                         : is_op(act, "fusebench", "Gelu")     ? "gelu"
                         : is_op(act, "fusebench", "GeluTanh") ? "gelu_tanh"
                                                               : nullptr;
      if (kind && node_fusible(act, cfg)) {
        f.attrs["activation"] = Attribute{std::string(kind)};
        idx.push_back(size_t(a));
        out = act.outputs[0];
        pattern += std::string("+") + act.op_type;
      }
    }
    if (idx.size() == 1 && is_matmul) continue;  // nothing to fuse
    f.outputs = {out};
    ctx.log.push_back("  matmul-bias-activation-fusion: " + pattern + " at '" + mm.name + "' → FusedMatMul");
    replace_nodes(g, idx, std::move(f));
    ++fused;
    --i;  // slot i now holds the next node (unsigned wrap at 0 is fine: ++i follows)
  }
  return fused;
}

}  // namespace fb
