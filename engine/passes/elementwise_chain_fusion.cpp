// Elementwise chain fusion: a run of float elementwise ops where each result feeds only
// the next op becomes one fusebench.ElementwiseChain, evaluated in one pass over memory
// (one read of each input, one write of the output, instead of one round trip per op).
//
//      a ─▶ Sub(a, b) ─▶ Mul(·, c) ─▶ Relu ─▶        ⇒   ElementwiseChain(a, b, c)
//
// Side inputs may broadcast. A chain stops at a value read twice; can_fuse shortens it
// at a graph output, a partition point or an excluded node (the longest prefix it allows
// is taken). Single ops are left as they are.
#include "engine/ops/elementwise_chain.h"
#include "engine/ops/op_registry.h"
#include "engine/passes/matcher.h"
#include "engine/passes/passes.h"

namespace fb {

namespace {

bool chainable(const PassContext& ctx, const Node& n) {
  const Graph& g = ctx.graph;
  const OpDef* def = ctx.ops.find(n.domain, n.op_type);
  if (!def || !def->elementwise || n.outputs.size() != 1) return false;
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

// The chain of the nodes at idx as one ElementwiseChain node.
Node chain_node(const Graph& g, const std::vector<size_t>& idx, std::string* text) {
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
  Node chain = fusebench_node(g.nodes[idx[0]].name + "_chain", "ElementwiseChain", inputs, {g.nodes[idx.back()].outputs[0]});
  chain.attrs["program"] = Attribute{encode_chain(prog)};
  *text = "  elementwise-chain-fusion: " + describe_chain(prog) + " from '" + g.nodes[idx[0]].name + "'";
  return chain;
}

// A chain's length is capped: every prefix is a candidate (can_fuse takes the longest it
// allows), so candidates cost the square of the length, and past a few dozen ops one
// more op saves a vanishing share of the chain's memory traffic. A longer run becomes
// several chains. (Uncapped, a 10,000-op chain took 100 s to build.)
constexpr size_t kMaxChainOps = 64;

std::vector<FusionMatch> match_elementwise_chain(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  if (!chainable(ctx, g.nodes[root])) return {};
  std::vector<size_t> idx{root};
  for (int c = single_consumer(g, g.nodes[root].outputs[0]);
       c >= 0 && idx.size() < kMaxChainOps && chainable(ctx, g.nodes[size_t(c)]);
       c = single_consumer(g, g.nodes[size_t(c)].outputs[0]))
    idx.push_back(size_t(c));
  // Every prefix of two or more, longest first.
  std::vector<FusionMatch> forms;
  for (size_t len = idx.size(); len >= 2; --len) {
    std::vector<size_t> prefix(idx.begin(), idx.begin() + long(len));
    std::string text;
    Node chain = chain_node(g, prefix, &text);
    forms.push_back(FusionMatch{std::move(prefix), std::move(chain), std::move(text)});
  }
  return forms;
}

}  // namespace

int elementwise_chain_fusion(PassContext& ctx) { return run_fusion_rule(ctx, match_elementwise_chain); }

}  // namespace fb
