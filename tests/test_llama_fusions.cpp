// LLaMA's patterns. RMSNorm: the exported decomposition (Pow, ReduceMean, Add, Sqrt, then
// x / r in each of its three spellings, then an optional gamma) becomes one
// fusebench.LayerNorm with rms = 1, a residual Add before it joins it as AddLayerNorm, and
// a reduction over another axis is left alone. The gate projection's SiLU (y · Sigmoid(y))
// becomes the FusedMatMul's post-op, unless the Sigmoid is read elsewhere, and the up
// projection multiplies by the gate in its epilogue. Every result agrees with the reference.
#include <gtest/gtest.h>

#include "engine/onnx/onnx_import.h"
#include "engine/passes/pass.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/cases/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kind;
using test::expect_agrees;

enum class Divide { Div, Reciprocal, OneOver };

// y = x / sqrt(mean(x², axis) + eps) [· gamma], x [N, 4, 16].
Graph rms_model(Divide divide, bool gamma, int64_t axis = -1) {
  zoo::OnnxBuilder b("rms", "rms");
  const std::string x = b.input("x", {zoo::kBatch, 4, 16});
  const std::string sq = b.node("/norm", "Pow", {x, b.scalar("two", 2.f)});
  const std::string ms = b.node("/norm", "ReduceMean", {sq}, {zoo::attr_ints("axes", {axis})});
  const std::string r = b.node("/norm", "Sqrt", {b.node("/norm", "Add", {ms, b.scalar("eps", 1e-6f)})});
  std::string y;
  if (divide == Divide::Div) y = b.node("/norm", "Div", {x, r});
  if (divide == Divide::Reciprocal) y = b.node("/norm", "Mul", {b.node("/norm", "Reciprocal", {r}), x});
  if (divide == Divide::OneOver) y = b.node("/norm", "Mul", {x, b.node("/norm", "Div", {b.scalar("one", 1.f), r})});
  if (gamma) y = b.node("/norm", "Mul", {b.weight("gamma", {16}, 0.5f, 1.f), y});
  b.output(y, "y", {zoo::kBatch, 4, 16});
  return import_onnx(b.finish(), "rms", "");
}

TEST(RmsNormFusion, EverySpellingBecomesOneLayer) {
  for (Divide divide : {Divide::Div, Divide::Reciprocal, Divide::OneOver})
    for (bool gamma : {true, false}) {
      SCOPED_TRACE(std::to_string(int(divide)) + (gamma ? " with gamma" : " bare"));
      const Graph g = rms_model(divide, gamma);
      BuildConfig cfg;
      cfg.batch = 2;
      auto e = build_engine(g, cfg);
      ASSERT_EQ(e->layers().size(), 1u);
      EXPECT_EQ(e->layers()[0].kind, "fusebench.LayerNorm");
      EXPECT_TRUE(test::log_mentions(*e, "→ LayerNorm (rms)"));
      expect_agrees(g, cfg);
    }
}

TEST(RmsNormFusion, AReductionOverAnotherAxisIsLeftAlone) {
  const Graph g = rms_model(Divide::Div, true, 1);
  BuildConfig cfg;
  cfg.batch = 2;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kind(*e, "fusebench.LayerNorm"), 0);
  expect_agrees(g, cfg);
}

// zoo:llama: two RMSNorms per layer and a final one, each after a residual Add but the
// first: the pre-norm form keeps the sum for the next residual.
// x [N, 4, 16] ─▶ MatMul(W) ─▶ Add(b) = y ─▶ y · Sigmoid(y), the Sigmoid optionally also an output.
Graph silu_model(bool sigmoid_read_elsewhere) {
  zoo::OnnxBuilder b("silu", "silu");
  const std::string x = b.input("x", {zoo::kBatch, 4, 16});
  const std::string y = b.node("/gate", "Add", {b.node("/gate", "MatMul", {x, b.weight("w", {16, 24}, 0.3f)}), b.weight("b", {24}, 0.1f)});
  const std::string sig = b.node("/act", "Sigmoid", {y});
  b.output(b.node("/act", "Mul", {sig, y}), "out", {zoo::kBatch, 4, 24});
  if (sigmoid_read_elsewhere) b.output(sig, "sig", {zoo::kBatch, 4, 24});
  return import_onnx(b.finish(), "silu", "");
}

TEST(SiluMatMulFusion, TheGatesSiluRidesOnTheMatMulUnlessItsSigmoidIsReadElsewhere) {
  BuildConfig cfg;
  cfg.batch = 2;
  const Graph g = silu_model(false);
  auto e = build_engine(g, cfg);
  ASSERT_EQ(e->layers().size(), 1u);
  EXPECT_NE(e->layers()[0].kernel.find("onednn.matmul+bias+silu"), std::string::npos) << e->layers()[0].kernel;
  expect_agrees(g, cfg);
  const Graph kept = silu_model(true);
  auto e2 = build_engine(kept, cfg);
  for (const LayerInfo& l : e2->layers()) EXPECT_EQ(l.kernel.find("silu"), std::string::npos) << l.kernel;
  expect_agrees(kept, cfg);
}

TEST(RmsNormFusion, LlamaNormsFuseWithTheirResidualsAndAgree) {
  LoadedModel m = load_model("zoo:llama?heads=2&hidden=32&layers=2&seq=8");
  for (FusionLevel level : {FusionLevel::Standard, FusionLevel::Aggressive}) {
    BuildConfig cfg;
    cfg.fusion = level;
    cfg.batch = 2;
    auto e = build_engine(m.graph, cfg);
    EXPECT_EQ(count_kind(*e, "fusebench.LayerNorm"), 1);
    EXPECT_EQ(count_kind(*e, "fusebench.AddLayerNorm"), 4);
    EXPECT_EQ(count_kind(*e, "Pow") + count_kind(*e, "ReduceMean") + count_kind(*e, "Sqrt"), 0);
    int silu_gates = 0;
    for (const LayerInfo& l : e->layers()) silu_gates += l.kernel.find("+silu") != std::string::npos;
    EXPECT_EQ(silu_gates, 2);  // one gate projection per layer
    int gated = 0;
    for (const LayerInfo& l : e->layers()) gated += l.kernel.find("+mul") != std::string::npos;
    EXPECT_EQ(gated, 2);  // the up projection, times the gate in its epilogue
    EXPECT_EQ(count_kind(*e, "Mul"), 0);
    EXPECT_EQ(count_kind(*e, "Sigmoid") + count_kind(*e, "fusebench.ElementwiseChain"), 0);
    expect_agrees(m.graph, cfg);
  }
}

}  // namespace
}  // namespace fb
