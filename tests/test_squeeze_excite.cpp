// Squeeze-and-excitation between channels-last convolutions (EfficientNet's MBConv):
// GlobalAveragePool reads NHWC, the channel gate Mul reads and writes NHWC, so the
// depthwise and projection convolutions around them stay channels-last. Plans agree with
// the reference executor, captures come back plain, and what the kernels cannot take (a
// gate whose operands are the same shape, a gate read by another op) stays plain.
#include <gtest/gtest.h>

#include "engine/zoo/onnx_builder.h"
#include "harness/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kernel;

const char* kEfficientNet = "zoo:efficientnet?classes=10&image=32&stages=3&width=50";

TEST(SqueezeExcite, EfficientNetStaysChannelsLastThroughTheGate) {
  LoadedModel m = load_model(kEfficientNet);
  for (int64_t batch : {1, 3}) {
    BuildConfig cfg;
    cfg.batch = batch;
    cfg.fusion = FusionLevel::Aggressive;
    auto e = build_engine(m.graph, cfg);
    // Stages 1-3 of B0: 1 + 2 + 2 blocks, each with one squeeze-and-excitation.
    EXPECT_EQ(count_kernel(*e, "fusebench.channel_gate nhwc→nhwc"), 5);
    EXPECT_EQ(count_kernel(*e, "fusebench.global_avg_pool nhwc"), 6);  // and the head's pool
    for (const LayerInfo& l : e->layers())
      if (l.kernel.find("_dw") != std::string::npos || l.kernel.find("dw:") != std::string::npos)
        EXPECT_NE(l.kernel.find("nhwc→nhwc"), std::string::npos) << l.name << ": " << l.kernel;
    test::expect_agrees(m.graph, cfg, 3);
  }
}

TEST(SqueezeExcite, CaptureSeesPlainTensors) {
  LoadedModel m = load_model(kEfficientNet);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.batch = 2;
  int gates = 0;
  for (const std::string& name : test::expect_captures_agree(m.graph, cfg, 4))
    gates += name.find("/block.2/Mul") != std::string::npos || name.find("/block.1/Mul") != std::string::npos;
  EXPECT_GE(gates, 5);
}

// x ─▶ Conv ─▶ v ─▶ Mul(v, s) or Mul(s, v) ─▶ Conv, s a constant [1,C,1,1] gate or a
// computed [N,C,1,1] one (GlobalAveragePool, Conv, Sigmoid); `gate_read_elsewhere` makes
// the gated value a graph output too.
Graph gate_model(bool gate_first, bool per_sample, bool gate_read_elsewhere) {
  zoo::OnnxBuilder b("gate", "gate");
  const int64_t c = 24;
  const std::string x = b.input("x", {zoo::kBatch, c, 9, 7});
  const std::string v = zoo::conv2d(b, "/a", "a", x, c, c, 3, 1, 1, 1, true, 1.f);
  std::string s = b.weight("gate", {1, c, 1, 1}, 0.5f, 1.f);
  if (per_sample)  // the excitation as torchvision writes it: a 1x1 convolution, then Sigmoid
    s = b.node("/excite", "Sigmoid",
               {zoo::conv2d(b, "/excite", "excite", b.node("/squeeze", "GlobalAveragePool", {v}), c, c, 1, 1, 0, 1, true, 1.f)});
  const std::string gated = b.node("/gate", "Mul", gate_first ? std::vector<std::string>{s, v} : std::vector<std::string>{v, s});
  const std::string y = zoo::conv2d(b, "/b", "b", gated, c, c, 1, 1, 0, 1, true, 1.f);
  b.output(y, "y", {zoo::kBatch, c, 9, 7});
  if (gate_read_elsewhere) b.output(v, "v", {zoo::kBatch, c, 9, 7});
  return import_onnx(b.finish(), "gate", "");
}

TEST(SqueezeExcite, EitherOperandOrderAndEitherGateShapeAgree) {
  for (bool gate_first : {false, true})
    for (bool per_sample : {false, true}) {
      SCOPED_TRACE(std::string(gate_first ? "Mul(s, v)" : "Mul(v, s)") + (per_sample ? ", [N,C,1,1]" : ", [1,C,1,1]"));
      const Graph g = gate_model(gate_first, per_sample, false);
      BuildConfig cfg;
      cfg.batch = 3;
      auto e = build_engine(g, cfg);
      EXPECT_EQ(count_kernel(*e, "fusebench.channel_gate nhwc→nhwc"), 1);
      EXPECT_EQ(count_kernel(*e, "nchw→nhwc"), 1);  // the first convolution writes v channels-last
      EXPECT_EQ(count_kernel(*e, "nhwc→nchw"), 1);  // the second reads the gate's output so
      EXPECT_EQ(count_kernel(*e, "global_avg_pool nhwc"), per_sample ? 1 : 0);
      test::expect_agrees(g, cfg, 9);
    }
}

TEST(SqueezeExcite, AGatedValueReadElsewhereStaysPlain) {
  const Graph g = gate_model(false, true, true);
  BuildConfig cfg;
  cfg.batch = 2;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kernel(*e, "channel_gate"), 0);
  EXPECT_EQ(count_kernel(*e, "global_avg_pool nhwc"), 0);
  test::expect_agrees(g, cfg, 9);
}

TEST(SqueezeExcite, Bf16BuildAgrees) {
  LoadedModel m = load_model(kEfficientNet);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.precision = "bf16";
  cfg.batch = 2;
  auto e = build_engine(m.graph, cfg);
  EXPECT_EQ(count_kernel(*e, "channel_gate nhwc→nhwc"), 5);
  ReferenceExecutor ref(m.graph, cfg.batch);
  auto inputs = make_inputs(m.graph, ref.input_shapes(), 6);
  e->run(inputs);
  AccuracyResult acc = compare_outputs(e->outputs(), ref.run(inputs), m.graph.outputs, default_accuracy("bf16"));
  EXPECT_TRUE(acc.passed) << acc.detail;
}

}  // namespace
}  // namespace fb
