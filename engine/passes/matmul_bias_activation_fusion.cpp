// MatMul/Gemm + bias + activation fusion:
//
//      x ──▶ MatMul(x, W) ──▶ Add(·, b) ──▶ Relu | Gelu | GeluTanh | SiLU   (Add and activation optional)
//      x ──▶ Gemm(x, W, c) ──▶ Relu | Gelu | GeluTanh | SiLU
//
// (SiLU as exported: y · Sigmoid(y), LLaMA's gate projection.)
//
// becomes one fusebench.FusedMatMul(x, W, b) with the activation as a oneDNN post-op.
// W must be a 2-D constant and b a constant with N elements; a Gemm is taken only when
// its C is such a vector with beta = 1 (or absent). When alpha != 1 the bias is left
// out, since oneDNN scales after adding it. The longest form can_fuse allows is taken.
#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

// The activations FusedMatMul runs as a post-op: the op, and its "activation" attribute.
struct ActivationRow {
  Op op;
  const char* name;
};
const ActivationRow kActivations[] = {
    {{"Relu"}, "relu"},
    {{"Gelu", -1, "fusebench"}, "gelu"},
    {{"GeluTanh", -1, "fusebench"}, "gelu_tanh"},
};

bool bias_vector(const Graph& g, const std::string& v, int64_t n) {
  auto it = g.initializers.find(v);
  if (it == g.initializers.end() || it->second.dtype() != DType::Float32 || it->second.numel() != n) return false;
  return it->second.shape().back() == n;
}

std::vector<FusionMatch> match_matmul_bias_activation(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& mm = g.nodes[root];
  const bool is_matmul = is_onnx_op(&mm, "MatMul"), is_gemm = is_onnx_op(&mm, "Gemm");
  if (!is_matmul && !is_gemm) return {};
  auto w = g.initializers.find(mm.inputs[1]);
  if (w == g.initializers.end() || w->second.rank() != 2 || w->second.dtype() != DType::Float32) return {};
  if (g.value(mm.inputs[0]).shape.size() < 2) return {};
  const int64_t n = g.value(mm.outputs[0]).shape.back();
  Node f = fusebench_node(mm.name, "FusedMatMul", {mm.inputs[0], mm.inputs[1]}, {});
  const float alpha = is_gemm ? mm.attr_float("alpha", 1.f) : 1.f;
  if (is_gemm) {
    f.attrs["transA"] = Attribute{mm.attr_int("transA", 0)};
    f.attrs["transB"] = Attribute{mm.attr_int("transB", 0)};
    if (alpha != 1.f) f.attrs["alpha"] = Attribute{alpha};
    if (mm.inputs.size() > 2 && !mm.inputs[2].empty()) {
      if (mm.attr_float("beta", 1.f) != 1.f || alpha != 1.f || !bias_vector(g, mm.inputs[2], n)) return {};
      f.inputs.push_back(mm.inputs[2]);
    }
  }
  // Each form extends the one before: [bias Add (MatMul only; Gemm carries its own)], [activation].
  std::vector<FusionMatch> forms;
  Matcher m(ctx, root);
  std::string out = mm.outputs[0], pattern = mm.op_type;
  auto add_form = [&] {
    Node fused = f;
    fused.outputs = {out};
    forms.insert(forms.begin(), m.match(std::move(fused), "  matmul-bias-activation-fusion: " + pattern + " at '" + mm.name + "' → FusedMatMul"));
  };
  if (is_gemm) add_form();  // a Gemm alone still becomes a FusedMatMul
  if (is_matmul) {
    const Node* add = m.reader(out, {"Add"});
    const std::string* other = Matcher::beside(add, out);
    if (other && bias_vector(g, *other, n) && g.value(add->outputs[0]).shape == g.value(out).shape) {
      f.inputs.push_back(*other);
      out = add->outputs[0];
      pattern += "+Add";
      add_form();
    } else if (add) {
      m.reset(1);
    }
  }
  const size_t mark = m.mark();
  auto activated = [&](const char* name, const Node* act, const std::string& what) {
    f.attrs["activation"] = Attribute{std::string(name)};
    // What the activation reads: an int8 build calibrates it (engine/passes/int8_lowering.h).
    f.attrs["activation_input"] = Attribute{out};
    out = act->outputs[0];
    pattern += "+" + what;
    add_form();
  };
  bool done = false;
  for (const ActivationRow& a : kActivations)
    if (const Node* act = m.reader(out, a.op)) {
      activated(a.name, act, act->op_type);
      done = true;
      break;
    }
  if (!done)
    if (const Node* mul = m.silu(out)) activated("silu", mul, "SiLU");
  m.reset(mark);
  return forms;
}

}  // namespace

int matmul_bias_activation_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_matmul_bias_activation); }

}  // namespace fb
