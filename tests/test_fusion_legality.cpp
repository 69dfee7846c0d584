// The one fusion-legality check (can_fuse), the use-def index the Graph keeps through the
// passes' edits, and the driver's fusion events, on small hand-built graphs.
#include <gtest/gtest.h>

#include "engine/passes/pass.h"

namespace fb {
namespace {

// x ─▶ a: Relu ─▶ t ─▶ b: Neg ─▶ u ─▶ c: Exp ─▶ y, and t also read by d: Abs ─▶ z
Graph chain_graph() {
  Graph g;
  g.inputs.push_back(GraphInput{"x", DType::Float32, {4}, {""}});
  auto node = [&](const char* name, const char* op, std::string in, std::string out) {
    Node n;
    n.name = name;
    n.op_type = op;
    n.inputs = {std::move(in)};
    n.outputs = {std::move(out)};
    n.sources = {name};
    g.values[n.outputs[0]] = ValueInfo{DType::Float32, {4}, true};
    g.nodes.push_back(n);
  };
  g.values["x"] = ValueInfo{DType::Float32, {4}, true};
  node("a", "Relu", "x", "t");
  node("b", "Neg", "t", "u");
  node("c", "Exp", "u", "y");
  node("d", "Abs", "t", "z");
  g.outputs = {"y", "z"};
  return g;
}

struct Fixture {
  Graph g = chain_graph();
  BuildConfig cfg;
  std::map<std::string, Tensor> known;
  std::vector<std::string> log;
  std::vector<FusionEvent> events;
  PassContext ctx{g, cfg, known, log, *OpRegistry::builtin(), &events, "test-fusion"};
  FusionMatch match(std::vector<size_t> nodes, std::vector<std::string> outputs) {
    return FusionMatch{std::move(nodes), fusebench_node("f", "ElementwiseChain", {"x"}, std::move(outputs)), "fused", {}};
  }
};

TEST(CanFuse, InteriorValuesReadOutsideOrPartitionPointsOrExcludedNodesRefuse) {
  Fixture f;
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({1, 2}, {"y"})), "");
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({0, 1}, {"u"})), "value 't' is also read by node 'd' (Abs)");
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({0, 1, 3}, {"u", "z"})), "");
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({1, 2}, {"u"})), "value 'y' is a graph output");
  f.cfg.partition_points = {"u"};
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({1, 2}, {"y"})), "value 'u' is a partition point");
  // Kept as an output of the fused node, a partition point is still crossed when read inside.
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({1, 2}, {"y", "u"})), "value 'u' is a partition point");
  f.cfg.partition_points = {};
  f.cfg.exclude_op_types = {"Exp"};
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({1, 2}, {"y"})), "node 'c' (Exp) is excluded from fusion");
  f.cfg.exclude_op_types = {};
  f.cfg.exclude_nodes = {"b*"};
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({1, 2}, {"y"})), "node 'b' (Neg) is excluded from fusion");
  f.cfg.exclude_nodes = {};
  f.g.nodes[2].precision = Precision::BF16;
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({1, 2}, {"y"})), "node 'b' (Neg) runs in fp32, node 'c' (Exp) in bf16");
  f.g.nodes[2].precision = Precision::FP32;
  EXPECT_EQ(fusion_refusal(f.ctx, f.match({1, 2}, {"y"}), 1), "2 nodes, more than the cap of 1");
}

TEST(GraphIndex, StaysCurrentThroughReplaceRewireAndCompact) {
  Graph g = chain_graph();
  EXPECT_EQ(g.consumers("t"), (std::vector<size_t>{1, 3}));
  EXPECT_EQ(g.producer("u")->name, "b");
  EXPECT_EQ(g.producer("x"), nullptr);
  Node f = fusebench_node("bc", "ElementwiseChain", {"t"}, {"y"});
  g.replace_nodes({1, 2}, f);
  EXPECT_TRUE(g.removed(1));
  EXPECT_EQ(g.producer("u"), nullptr);
  EXPECT_EQ(g.producer("y")->name, "bc");
  EXPECT_EQ(g.nodes[2].sources, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(g.consumers("t"), (std::vector<size_t>{2, 3}));
  g.rewire_input(3, "t", "x");
  EXPECT_EQ(g.consumers("t"), (std::vector<size_t>{2}));
  EXPECT_EQ(g.consumers("x"), (std::vector<size_t>{0, 3}));
  g.compact();
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.consumers("x"), (std::vector<size_t>{0, 2}));
  EXPECT_EQ(g.producer_index("y"), 1);
  Graph copy = g;  // a copy indexes itself
  copy.nodes.pop_back();
  copy.nodes_changed();
  EXPECT_EQ(copy.producer("z"), nullptr);
  EXPECT_EQ(g.producer("z")->name, "d");
}

// A rule fusing Neg→Exp: the driver applies what can_fuse allows and records both kinds of event.
std::vector<FusionMatch> neg_exp(const PassContext& ctx, size_t root) {
  const Graph& g = ctx.graph;
  if (!is_onnx_op(&g.nodes[root], "Neg")) return {};
  const int c = single_consumer(g, g.nodes[root].outputs[0]);
  if (c < 0 || !is_onnx_op(&g.nodes[size_t(c)], "Exp")) return {};
  Node f = fusebench_node("negexp", "ElementwiseChain", g.nodes[root].inputs, g.nodes[size_t(c)].outputs);
  return {FusionMatch{{root, size_t(c)}, f, "  test-fusion: Neg+Exp", {}}};
}

TEST(FusionDriver, AppliesWhatCanFuseAllowsAndRecordsEvents) {
  Fixture f;
  f.cfg.partition_points = {"u"};
  EXPECT_EQ(run_fusion_rule(f.ctx, neg_exp), 0);
  ASSERT_EQ(f.events.size(), 1u);
  EXPECT_EQ(f.events[0].refused, "value 'u' is a partition point");
  EXPECT_EQ(f.events[0].root, "b");
  EXPECT_EQ(f.log.back(), "  test-fusion: refused at 'b': value 'u' is a partition point");

  Fixture g;
  EXPECT_EQ(run_fusion_rule(g.ctx, neg_exp), 1);
  ASSERT_EQ(g.events.size(), 1u);
  EXPECT_EQ(g.events[0].fused, "negexp");
  EXPECT_EQ(g.events[0].nodes, (std::vector<std::string>{"b", "c"}));
  EXPECT_EQ(g.log.back(), "  test-fusion: Neg+Exp");
  ASSERT_EQ(g.g.nodes.size(), 3u);  // compacted
  EXPECT_EQ(g.g.nodes[1].name, "negexp");
}

}  // namespace
}  // namespace fb
