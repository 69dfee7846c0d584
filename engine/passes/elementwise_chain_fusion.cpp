// Elementwise chain fusion: a run of float elementwise ops where each result feeds only
// the next op becomes one fusebench.ElementwiseChain, evaluated in one pass over memory
// (one read of each input, one write of the output, instead of one round trip per op).
//
//      a ─▶ Sub(a, b) ─▶ Mul(·, c) ─▶ Relu ─▶        ⇒   ElementwiseChain(a, b, c)
//
// Side inputs may broadcast. A chain stops at a value read twice, a graph output, a
// partition point or an excluded node. Single ops are left as they are.
#include "engine/ops/elementwise_chain.h"
#include "engine/ops/op_registry.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

bool chainable(const PassContext& ctx, const Node& n) {
  const Graph& g = ctx.graph;
  const BuildConfig& cfg = ctx.config;
  const OpDef* def = ctx.ops.find(n.domain, n.op_type);
  if (!def || !def->elementwise || n.outputs.size() != 1 || !node_fusible(n, cfg)) return false;
  if (n.domain == "fusebench" && n.op_type == "ElementwiseChain") return false;
  UnaryFn u;
  BinaryFn b;
  const bool known = (n.inputs.size() == 1 && unary_from_op_type(n.op_type, &u)) ||
                     (n.inputs.size() == 2 && binary_from_op_type(n.op_type, &b));
  if (!known) return false;
  for (const std::string& in : n.inputs)
    if (in.empty() || g.value(in).dtype != DType::Float32) return false;
  return g.value(n.outputs[0]).dtype == DType::Float32;
}

}  // namespace

int elementwise_chain_fusion(PassContext& ctx) {
  Graph& g = ctx.graph;
  const BuildConfig& cfg = ctx.config;
  int fused = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    if (!chainable(ctx, g.nodes[i])) continue;
    std::vector<size_t> idx{i};
    std::string out = g.nodes[i].outputs[0];
    while (value_fusible(g, out, cfg)) {
      const int c = single_consumer(g, out);
      if (!chainable(ctx, g.nodes[size_t(c)])) break;
      idx.push_back(size_t(c));
      out = g.nodes[size_t(c)].outputs[0];
    }
    if (idx.size() < 2) continue;
    // Registers: external inputs first, then one per instruction.
    std::vector<std::string> inputs;
    std::map<std::string, int> reg;
    auto reg_of = [&](const std::string& v) {
      auto it = reg.find(v);
      if (it != reg.end()) return it->second;
      inputs.push_back(v);
      return reg[v] = -int(inputs.size());  // provisional: renumbered below
    };
    std::vector<ChainInstr> prog;
    std::vector<std::pair<int, int>> operands;
    for (size_t k = 0; k < idx.size(); ++k) {
      const Node& n = g.nodes[idx[k]];
      ChainInstr in{};
      UnaryFn u;
      BinaryFn b;
      if (n.inputs.size() == 1 && unary_from_op_type(n.op_type, &u)) {
        in = {0, int(u), reg_of(n.inputs[0]), 0};
      } else {
        binary_from_op_type(n.op_type, &b);
        const int a = reg_of(n.inputs[0]);
        in = {1, int(b), a, reg_of(n.inputs[1])};
      }
      prog.push_back(in);
      reg[n.outputs[0]] = int(1000000 + k);  // instruction result
    }
    const int n_in = int(inputs.size());
    auto fix = [&](int r) { return r < 0 ? -r - 1 : n_in + (r - 1000000); };
    for (ChainInstr& in : prog) {
      in.a = fix(in.a);
      if (in.kind == 1) in.b = fix(in.b);
    }
    Node chain;
    chain.name = g.nodes[idx[0]].name + "_chain";
    chain.op_type = "ElementwiseChain";
    chain.domain = "fusebench";
    chain.inputs = inputs;
    chain.outputs = {out};
    chain.attrs["program"] = Attribute{encode_chain(prog)};
    ctx.log.push_back("  elementwise-chain-fusion: " + describe_chain(prog) + " from '" + g.nodes[idx[0]].name + "'");
    replace_nodes(g, idx, std::move(chain));
    ++fused;
    --i;  // slot i now holds the next node (unsigned wrap at 0 is fine: ++i follows)
  }
  return fused;
}

}  // namespace fb
