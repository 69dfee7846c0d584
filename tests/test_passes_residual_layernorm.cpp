// Residual Add + LayerNorm: post-LN BERT fuses with one output, pre-LN ViT keeps the sum
// as a second output for the next residual; ONNX LayerNormalization fuses too; exclusions,
// partition points, broadcast adds and a reader before the LayerNorm stop it.
#include <gtest/gtest.h>

#include "engine/passes/pass.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/cases/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kind;
using test::expect_agrees;

int count_with_outputs(const Engine& e, const std::string& kind, size_t outputs) {
  int n = 0;
  for (const LayerInfo& l : e.layers()) n += l.kind == kind && l.output_shapes.size() == outputs;
  return n;
}

TEST(ResidualLayerNormFusion, PostLnBertFusesBothResidualsPerLayer) {
  LoadedModel m = load_model("zoo:bert?heads=2&hidden=32&layers=2&seq=8");
  for (FusionLevel level : {FusionLevel::Standard, FusionLevel::Aggressive}) {
    BuildConfig cfg;
    cfg.fusion = level;
    cfg.batch = 2;
    auto e = build_engine(m.graph, cfg);
    EXPECT_EQ(count_with_outputs(*e, "fusebench.AddLayerNorm", 1), 4);
    EXPECT_EQ(count_kind(*e, "fusebench.LayerNorm"), 1);  // the embedding's has no residual
    EXPECT_EQ(count_kind(*e, "Add"), 0);
    for (const LayerInfo& l : e->layers())
      if (l.kind == "fusebench.AddLayerNorm") {
        EXPECT_GE(l.sources.size(), 10u);  // the Add and the LayerNorm's own nodes
        EXPECT_TRUE(glob_match("*/Add", l.sources.front()) || glob_match("*/Add_*", l.sources.front())) << l.sources.front();
      }
    expect_agrees(m.graph, cfg);
  }
}

TEST(ResidualLayerNormFusion, PreLnVitKeepsTheSumForTheNextResidual) {
  LoadedModel m = load_model("zoo:vit?classes=5&heads=2&hidden=32&image=16&layers=2&patch=4");
  BuildConfig cfg;
  cfg.batch = 2;
  auto e = build_engine(m.graph, cfg);
  // Per layer: attention residual + layernorm_after, output residual + the next layer's
  // layernorm_before (the last one: the final LayerNorm, where the sum has no other reader).
  EXPECT_EQ(count_with_outputs(*e, "fusebench.AddLayerNorm", 2), 3);
  EXPECT_EQ(count_with_outputs(*e, "fusebench.AddLayerNorm", 1), 1);
  expect_agrees(m.graph, cfg);
}

TEST(ResidualLayerNormFusion, ExclusionsAndPartitionPointsStopIt) {
  LoadedModel m = load_model("zoo:bert?heads=2&hidden=32&layers=2&seq=8");
  BuildConfig by_name;
  by_name.exclude_nodes = {"/encoder/layer.1/*"};
  auto e = build_engine(m.graph, by_name);
  EXPECT_EQ(count_kind(*e, "fusebench.AddLayerNorm"), 2);
  expect_agrees(m.graph, by_name);

  BuildConfig by_op;
  by_op.exclude_op_types = {"Add"};
  e = build_engine(m.graph, by_op);
  EXPECT_EQ(count_kind(*e, "fusebench.AddLayerNorm"), 0);
  expect_agrees(m.graph, by_op);

  BuildConfig by_point;
  by_point.partition_points = {"/encoder/layer.0/output/Add_output_0"};
  e = build_engine(m.graph, by_point);
  EXPECT_EQ(count_kind(*e, "fusebench.AddLayerNorm"), 3);
  expect_agrees(m.graph, by_point);
}

// s = Add(x, r) ─▶ LayerNormalization (ONNX, opset 17), with optional extras.
struct Residual {
  bool broadcast_residual = false;  // r is [H]: a bias, not a residual
  bool early_reader = false;        // something reads s before the LayerNorm
};

Graph onnx_layernorm_graph(Residual opt) {
  zoo::OnnxBuilder b("res", "res");
  const std::string x = b.input("x", {zoo::kBatch, 3, 8});
  const std::string r = opt.broadcast_residual ? b.weight("r", {8}, 1.f) : b.node("/r", "Tanh", {x});
  const std::string s = b.node("/res", "Add", {x, r});
  std::string side;
  if (opt.early_reader) side = b.node("/side", "Sigmoid", {s});
  const std::string y = b.node("/ln", "LayerNormalization", {s, b.weight("gamma", {8}, 0.2f, 1.f), b.weight("beta", {8}, 0.2f)},
                               {zoo::attr_int("axis", -1), zoo::attr_float("epsilon", 1e-5f)});
  b.output(y, "y", {zoo::kBatch, 3, 8});
  if (opt.early_reader) b.output(side, "side", {zoo::kBatch, 3, 8});
  return import_onnx(b.finish(), "res", "");
}

TEST(ResidualLayerNormFusion, OnnxLayerNormalizationFusesToo) {
  const Graph g = onnx_layernorm_graph({});
  BuildConfig cfg;
  cfg.batch = 2;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_with_outputs(*e, "fusebench.AddLayerNorm", 1), 1);
  EXPECT_EQ(count_kind(*e, "LayerNormalization"), 0);
  expect_agrees(g, cfg);
}

TEST(ResidualLayerNormFusion, BroadcastAddAndEarlyReaderAreLeftAlone) {
  for (Residual opt : {Residual{true, false}, Residual{false, true}}) {
    const Graph g = onnx_layernorm_graph(opt);
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kind(*e, "fusebench.AddLayerNorm"), 0);
    // The Add stays; the LayerNormalization alone becomes the engine's LayerNorm.
    EXPECT_EQ(count_kind(*e, "LayerNormalization"), 0);
    EXPECT_EQ(count_kind(*e, "fusebench.LayerNorm"), 1);
    expect_agrees(g, cfg);
  }
}

}  // namespace
}  // namespace fb
