// Fusion passes and their limits: each pattern fires where it should, exclusions and
// partition points stop it, and the limited plans still agree with the reference.
// Tolerance as in test_engine: 1e-4 absolute on O(1) outputs.
#include <gtest/gtest.h>

#include "engine/passes/pass.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/cases/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kind;

void expect_agrees(const LoadedModel& m, const BuildConfig& cfg) { test::expect_agrees(m.graph, cfg); }

const char* kBert = "zoo:bert?heads=2&hidden=32&layers=2&seq=8";

TEST(Passes, AggressiveFusesAttentionOncePerLayer) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  auto e = build_engine(m.graph, cfg);
  EXPECT_EQ(count_kind(*e, "fusebench.Attention"), 2);
  EXPECT_EQ(count_kind(*e, "Softmax"), 0);
  EXPECT_EQ(count_kind(*e, "Transpose"), 0);  // head split and merge are strides now
  expect_agrees(m, cfg);
}

TEST(Passes, ExcludedOpTypeIsNeverFused) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.exclude_op_types = {"Softmax", "Erf"};
  auto e = build_engine(m.graph, cfg);
  EXPECT_EQ(count_kind(*e, "fusebench.Attention"), 0);
  EXPECT_EQ(count_kind(*e, "Softmax"), 2);
  EXPECT_EQ(count_kind(*e, "fusebench.Gelu"), 0);
  EXPECT_EQ(count_kind(*e, "Erf"), 2);
  expect_agrees(m, cfg);
}

TEST(Passes, ExcludedNodeGlobKeepsThatModuleUnfused) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.exclude_nodes = {"/encoder/layer.1/*"};
  auto e = build_engine(m.graph, cfg);
  for (const LayerInfo& l : e->layers()) {
    bool in_layer1 = false;
    for (const std::string& s : l.sources) in_layer1 = in_layer1 || glob_match("/encoder/layer.1/*", s);
    if (in_layer1) {
      EXPECT_EQ(l.sources.size(), 1u) << l.name;
    }
  }
  EXPECT_EQ(count_kind(*e, "fusebench.LayerNorm"), 1);     // the embedding's
  EXPECT_EQ(count_kind(*e, "fusebench.AddLayerNorm"), 2);  // layer 0's two, with their residual Adds
  expect_agrees(m, cfg);
}

TEST(Passes, PartitionPointStopsFusionAtThatTensor) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  auto fused = build_engine(m.graph, cfg);
  // The first FFN's bias output: MatMul+Add may still fuse, but not across into GELU.
  cfg.partition_points = {"/encoder/layer.0/intermediate/dense/Add_output_0"};
  auto limited = build_engine(m.graph, cfg);
  EXPECT_EQ(count_kind(*fused, "fusebench.Gelu"), 0);  // both GELUs went into their matmuls
  EXPECT_EQ(count_kind(*limited, "fusebench.Gelu"), 1);
  EXPECT_EQ(limited->layers().size(), fused->layers().size() + 1);
  expect_agrees(m, cfg);
}

// The LayerNorm pattern's Sub output has two readers inside the pattern (Pow and Div):
// a partition point there must still stop the fusion (it once built one LayerNorm across it).
TEST(Passes, PartitionPointOnAValueReadTwiceInsideLayerNormStopsIt) {
  LoadedModel m = load_model("zoo:bert?layers=1");
  BuildConfig cfg;
  auto fused = build_engine(m.graph, cfg);
  cfg.partition_points = {"/embeddings/LayerNorm/Sub_output_0"};
  auto limited = build_engine(m.graph, cfg);
  EXPECT_EQ(count_kind(*fused, "fusebench.LayerNorm"), 1);  // the embedding's (the others took their residual Adds)
  // Past the partition point the rest is an RMSNorm of d (Pow, ReduceMean, Add, Sqrt, Div,
  // Mul gamma): that fuses on its own side, the Sub and its mean stay apart.
  EXPECT_EQ(count_kind(*limited, "fusebench.LayerNorm"), 1);
  for (const LayerInfo& l : limited->layers()) {
    bool has_sub = false, has_div = false;
    for (const std::string& s : l.sources) {
      has_sub = has_sub || s == "/embeddings/LayerNorm/Sub";
      has_div = has_div || s == "/embeddings/LayerNorm/Div";
    }
    EXPECT_FALSE(has_sub && has_div) << l.name << " crosses the partition point";
  }
  bool refused = false;
  for (const FusionEvent& e : limited->fusion_events())
    refused = refused || (e.pass == "layernorm-fusion" && e.root == "/embeddings/LayerNorm/ReduceMean" &&
                          e.refused == "value '/embeddings/LayerNorm/Sub_output_0' is a partition point" && e.fused.empty());
  EXPECT_TRUE(refused);
  expect_agrees(m, cfg);
}

TEST(Passes, GlobMatches) {
  EXPECT_TRUE(glob_match("/encoder/*/attention/*", "/encoder/layer.0/attention/self/MatMul"));
  EXPECT_TRUE(glob_match("*MatMul?", "/a/MatMul1"));
  EXPECT_FALSE(glob_match("/encoder/layer.1/*", "/encoder/layer.10"));
  EXPECT_FALSE(glob_match("abc", "abcd"));
}

TEST(Passes, ResnetFoldsEveryBatchNormAndFusesRelu) {
  LoadedModel m = load_model("zoo:resnet?blocks=1&image=16&stages=2&width=8");
  BuildConfig cfg;
  auto e = build_engine(m.graph, cfg);
  EXPECT_EQ(count_kind(*e, "BatchNormalization"), 0);
  EXPECT_GT(count_kind(*e, "fusebench.FusedConv"), 0);
  expect_agrees(m, cfg);
}

TEST(Passes, MarkAllKeepsEveryTensorAndCaptureSeesThem) {
  LoadedModel m = load_model("zoo:mlp?hidden=16&in=8&layers=2&out=4");
  BuildConfig cfg;
  cfg.fusion = FusionLevel::MarkAll;
  auto e = build_engine(m.graph, cfg);
  EXPECT_EQ(e->layers().size(), m.graph.nodes.size());
  ReferenceExecutor ref(m.graph, 1);
  auto inputs = make_inputs(m.graph, ref.input_shapes(), 3);
  auto all_ref = ref.run_all(inputs);
  // Capturing intermediates from a *standard* plan runs that same plan, unchanged.
  BuildConfig std_cfg;
  auto std_engine = build_engine(m.graph, std_cfg);
  const size_t layers_before = std_engine->layers().size();
  auto captured = std_engine->run_capture(inputs);
  EXPECT_EQ(std_engine->layers().size(), layers_before);
  for (const auto& [name, t] : captured) {
    ASSERT_TRUE(all_ref.count(name)) << name;
    AccuracyResult acc = compare_outputs({t}, {all_ref.at(name)}, {name}, {1e-5, 1e-4});
    EXPECT_TRUE(acc.passed) << name << ": " << acc.detail;
  }
}

}  // namespace
}  // namespace fb

namespace fb {
namespace {

// A chain with broadcast side inputs of three shapes, a unary op in the middle, and the
// chain's input read twice: one generated kernel, same numbers as op by op.
TEST(Passes, ElementwiseChainWithBroadcastsMatchesTheReference) {
  zoo::OnnxBuilder b("chain", "chain");
  const std::string x = b.input("x", {zoo::kBatch, 4, 8});
  const std::string row = b.weight("row", {8}, 1.f);
  const std::string col = b.weight("col", {4, 1}, 1.f);
  const std::string half = b.scalar("half", 0.5f);
  std::string y = b.node("/m", "Sub", {x, row});
  y = b.node("/m", "Mul", {y, half});
  y = b.node("/m", "Tanh", {y});
  y = b.node("/m", "Add", {y, col});
  y = b.node("/m", "Mul", {y, x});
  b.output(y, "y", {zoo::kBatch, 4, 8});
  LoadedModel m;
  m.graph = import_onnx(b.finish(), "chain", "");
  BuildConfig cfg;
  cfg.batch = 3;
  auto e = build_engine(m.graph, cfg);
  ASSERT_EQ(e->layers().size(), 1u);
  EXPECT_EQ(e->layers()[0].kind, "fusebench.ElementwiseChain");
  EXPECT_EQ(e->layers()[0].sources.size(), 5u);
  expect_agrees(m, cfg);
}

// Self-attention with an additive mask before the Softmax, as PyTorch exports BERT: a
// [B,1,1,S] padding mask from a graph input and a [1,1,S,S] weight (causal-like) both fold
// into the one attention layer and agree with op-by-op execution.
TEST(Passes, AttentionWithAdditiveMaskFusesAndMatchesTheReference) {
  for (const bool padding_mask : {true, false}) {
    const int64_t S = 6, H = 16, heads = 4;
    zoo::OnnxBuilder b("masked", "masked");
    const std::string x = b.input("x", {zoo::kBatch, S, H});
    const std::string mask = padding_mask ? b.input("mask", {zoo::kBatch, 1, 1, S}) : b.weight("mask", {1, 1, S, S}, 1.f);
    const std::string split = b.ints("split", {0, 0, heads, H / heads}), merge = b.ints("merge", {0, 0, H});
    auto heads_of = [&](const std::string& v, std::vector<int64_t> perm) {
      return b.node("/att", "Transpose", {b.node("/att", "Reshape", {v, split})}, {zoo::attr_ints("perm", perm)});
    };
    const std::string q = heads_of(b.node("/att", "MatMul", {x, b.weight("wq", {H, H}, 0.5f)}), {0, 2, 1, 3});
    const std::string kt = heads_of(b.node("/att", "MatMul", {x, b.weight("wk", {H, H}, 0.5f)}), {0, 2, 3, 1});
    const std::string v = heads_of(b.node("/att", "MatMul", {x, b.weight("wv", {H, H}, 0.5f)}), {0, 2, 1, 3});
    std::string scores = b.node("/att", "Div", {b.node("/att", "MatMul", {q, kt}), b.scalar("scale", 2.f)});
    scores = b.node("/att", "Add", {scores, mask});
    const std::string probs = b.node("/att", "Softmax", {scores}, {zoo::attr_int("axis", -1)});
    const std::string ctx = b.node("/att", "Transpose", {b.node("/att", "MatMul", {probs, v})}, {zoo::attr_ints("perm", {0, 2, 1, 3})});
    b.output(b.node("/att", "Reshape", {ctx, merge}), "y", {zoo::kBatch, S, H});
    LoadedModel m;
    m.graph = import_onnx(b.finish(), "masked", "");
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.batch = 3;
    auto e = build_engine(m.graph, cfg);
    EXPECT_EQ(count_kind(*e, "fusebench.Attention"), 1) << padding_mask;
    EXPECT_EQ(count_kind(*e, "Softmax"), 0) << padding_mask;
    expect_agrees(m, cfg);
  }
}

}  // namespace
}  // namespace fb
