// GPT-2's patterns. The causal mask, applied as Where(mask, scores, finfo.min) before the
// softmax, becomes an additive mask constant (where-mask), so the attention with its
// Split-fed Q, K and V fuses into one layer; what the rewrite cannot take stays a Where:
// a fill that is not a mask (-1), a Where read by more than the softmax, a condition known
// only at run time. Every result agrees with the reference.
#include <gtest/gtest.h>

#include "engine/onnx/onnx_import.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/cases/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kind;
using test::expect_agrees;

const char* kGpt = "zoo:gpt?heads=2&hidden=32&layers=2&seq=8";

TEST(GptFusions, CausalAttentionBecomesOneLayer) {
  LoadedModel m = load_model(kGpt);
  for (int64_t batch : {1, 3}) {
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.batch = batch;
    auto e = build_engine(m.graph, cfg);
    EXPECT_EQ(count_kind(*e, "fusebench.Attention"), 2);
    EXPECT_EQ(count_kind(*e, "Where"), 0);
    EXPECT_EQ(count_kind(*e, "Softmax"), 0);
    for (const LayerInfo& l : e->layers())
      if (l.kind == "fusebench.Attention") {
        ASSERT_EQ(l.input_shapes.size(), 4u) << "q, k, v and the mask";
        EXPECT_EQ(l.input_shapes[3], (Shape{1, 1, 8, 8}));
      }
    EXPECT_TRUE(test::log_mentions(*e, "where-mask: '/h.0/attn/Where' → Add of a [1,1,8,8] mask"));
    expect_agrees(m.graph, cfg, 4);
  }
  BuildConfig standard;  // no attention fusion: the additive mask joins the scale in a chain
  standard.batch = 2;
  auto e = build_engine(m.graph, standard);
  EXPECT_EQ(count_kind(*e, "Where"), 0);
  expect_agrees(m.graph, standard, 4);
}

enum class Variant { Mask, InvertedMask, SmallFill, ReadElsewhere, RuntimeCondition };

// scores [N, 2, 4, 4] ─ Where ─ Softmax, the condition a constant lower triangle (or, for
// RuntimeCondition, x > 0 computed from the input).
Graph where_softmax(Variant variant) {
  zoo::OnnxBuilder b("ws", "ws");
  const std::string x = b.input("x", {zoo::kBatch, 2, 4, 4});
  const std::string scores = b.node("/s", "Mul", {x, b.scalar("scale", 0.5f)});
  std::string cond = b.node("/mask", "GreaterOrEqual",
                            {b.node("/mask", "Reshape", {b.ints("pos", {0, 1, 2, 3}), b.ints("col", {4, 1})}), b.ints("pos", {0, 1, 2, 3})});
  if (variant == Variant::RuntimeCondition) cond = b.node("/mask", "Greater", {x, b.scalar("zero", 0.f)});
  const std::string fill = b.scalar("fill", variant == Variant::SmallFill ? -1.f : -3.4028234663852886e38f);
  const std::string w = b.node("/attn", "Where",
                               variant == Variant::InvertedMask ? std::vector<std::string>{cond, fill, scores}
                                                                : std::vector<std::string>{cond, scores, fill});
  b.output(b.node("/attn", "Softmax", {w}, {zoo::attr_int("axis", -1)}), "y", {zoo::kBatch, 2, 4, 4});
  if (variant == Variant::ReadElsewhere) b.output(w, "masked", {zoo::kBatch, 2, 4, 4});
  return import_onnx(b.finish(), "ws", "");
}

TEST(GptFusions, OnlyAMaskBeforeASoftmaxBecomesAnAdd) {
  for (Variant v : {Variant::Mask, Variant::InvertedMask, Variant::SmallFill, Variant::ReadElsewhere, Variant::RuntimeCondition}) {
    SCOPED_TRACE(int(v));
    const Graph g = where_softmax(v);
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    const bool rewritten = v == Variant::Mask || v == Variant::InvertedMask;
    EXPECT_EQ(count_kind(*e, "Where"), rewritten ? 0 : 1);
    EXPECT_EQ(test::log_mentions(*e, "where-mask: '/attn/Where'"), rewritten);
    expect_agrees(g, cfg, 6);
  }
}

}  // namespace
}  // namespace fb
