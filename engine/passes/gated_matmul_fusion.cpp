// Gated matmul fusion: a FusedMatMul whose only reader multiplies it, element by element,
// by another tensor of its shape
//
//      x ──▶ FusedMatMul(x, W, b) = u ──▶ Mul(u, g)        (g: the gate, e.g. SiLU(x·Wg))
//
// becomes FusedMatMul(x, W, b, g): oneDNN multiplies by g in the matmul's epilogue, so u is
// never written and read back (LLaMA's SwiGLU: up_proj(x) · silu(gate_proj(x))). The fused
// layer stands where the Mul stood, after g's producer. Left alone: a matmul with a
// multiplier already, a Mul that broadcasts, and (can_fuse) u read anywhere else.
#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

std::vector<FusionMatch> match_gated_matmul(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  const Node& mm = g.nodes[root];
  if (mm.domain != "fusebench" || mm.op_type != "FusedMatMul" || mm.inputs.size() > 3) return {};
  const std::string& u = mm.outputs[0];
  Matcher m(ctx, root);
  const Node* mul = m.reader(u, {"Mul", 2});
  const std::string* gate = Matcher::beside(mul, u);
  if (!gate || *gate == u) return {};
  const ValueInfo &uv = g.value(u), &gv = g.value(*gate);
  if (uv.dtype != DType::Float32 || gv.dtype != DType::Float32 || gv.shape != uv.shape ||
      g.value(mul->outputs[0]).shape != uv.shape)
    return {};
  Node f = mm;
  f.inputs.resize(3);  // an omitted bias stays omitted
  f.inputs.push_back(*gate);
  f.outputs = {mul->outputs[0]};
  return {m.match(std::move(f), "  gated-matmul-fusion: '" + mm.name + "' × '" + *gate + "' → FusedMatMul (multiplied in its epilogue)")};
}

}  // namespace

int gated_matmul_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_gated_matmul); }

}  // namespace fb
