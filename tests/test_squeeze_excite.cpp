// Squeeze-and-excitation between channels-last convolutions (EfficientNet's MBConv):
// GlobalAveragePool reads NHWC, the channel gate Mul reads and writes NHWC, so the
// depthwise and projection convolutions around them stay channels-last. Plans agree with
// the reference executor, captures come back plain, and what the kernels cannot take (a
// gate whose operands are the same shape, a gate read by another op) stays plain. A
// ReduceMean over the spatial axes (timm's gates, MNASNet's head) is the same
// GlobalAveragePool (spatial-mean-pooling).
#include <gtest/gtest.h>

#include "engine/zoo/onnx_builder.h"
#include "harness/cases/model_source.h"
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
      if (l.kernel.find("_dw") != std::string::npos || l.kernel.find("dw:") != std::string::npos) {
        EXPECT_NE(l.kernel.find("nhwc→nhwc"), std::string::npos) << l.name << ": " << l.kernel;
      }
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
// the gated value a graph output too; `reduce_mean`: the squeeze is written
// ReduceMean(axes=[2,3], keepdims=1), as timm writes it.
Graph gate_model(bool gate_first, bool per_sample, bool gate_read_elsewhere, bool reduce_mean = false) {
  zoo::OnnxBuilder b("gate", "gate");
  const int64_t c = 24;
  const std::string x = b.input("x", {zoo::kBatch, c, 9, 7});
  const std::string v = zoo::conv2d(b, "/a", "a", x, c, c, 3, 1, 1, 1, true, 1.f);
  std::string s = b.weight("gate", {1, c, 1, 1}, 0.5f, 1.f);
  if (per_sample) {  // the excitation as torchvision writes it: a 1x1 convolution, then Sigmoid
    const std::string squeezed = reduce_mean ? b.node("/squeeze", "ReduceMean", {v}, {zoo::attr_ints("axes", {2, 3})})
                                             : b.node("/squeeze", "GlobalAveragePool", {v});
    s = b.node("/excite", "Sigmoid", {zoo::conv2d(b, "/excite", "excite", squeezed, c, c, 1, 1, 0, 1, true, 1.f)});
  }
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

TEST(SqueezeExcite, ASpatialReduceMeanSqueezeIsAGlobalPool) {
  const Graph g = gate_model(false, true, false, true);
  BuildConfig cfg;
  cfg.batch = 3;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(test::count_kind(*e, "ReduceMean"), 0);
  EXPECT_EQ(count_kernel(*e, "global_avg_pool nhwc"), 1);
  EXPECT_EQ(count_kernel(*e, "fusebench.channel_gate nhwc→nhwc"), 1);
  EXPECT_TRUE(test::log_mentions(*e, "spatial-mean-pooling: '/squeeze/ReduceMean'"));
  test::expect_agrees(g, cfg, 9);
}

// conv ─▶ ReduceMean(axes) ─▶ out: MNASNet's head (axes [2,3], keepdims 0) becomes a global
// pool and a Flatten; reductions over other axes stay ReduceMean.
TEST(SqueezeExcite, OnlyAMeanOverEverySpatialAxisBecomesAPool) {
  struct Form {
    std::vector<int64_t> axes;
    int64_t keepdims;
    std::vector<int64_t> out;  // beyond the batch
    bool pools;
  };
  const std::vector<Form> forms = {
      {{2, 3}, 0, {8}, true},
      {{-1, -2}, 1, {8, 1, 1}, true},
      {{3, 2}, 0, {8}, true},
      {{1, 2, 3}, 0, {}, false},
      {{2}, 1, {8, 1, 6}, false},
  };
  for (const Form& f : forms) {
    SCOPED_TRACE(testing::PrintToString(f.axes) + " keepdims " + std::to_string(f.keepdims));
    zoo::OnnxBuilder b("mean", "mean");
    const std::string x = b.input("x", {zoo::kBatch, 3, 5, 6});
    const std::string v = zoo::conv2d(b, "/a", "a", x, 3, 8, 3, 1, 1, 1, true, 1.f);
    const std::string y =
        b.node("/head", "ReduceMean", {v}, {zoo::attr_ints("axes", f.axes), zoo::attr_int("keepdims", f.keepdims)});
    std::vector<int64_t> dims{zoo::kBatch};
    dims.insert(dims.end(), f.out.begin(), f.out.end());
    b.output(y, "y", dims);
    const Graph g = import_onnx(b.finish(), "mean", "");
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(test::count_kind(*e, "ReduceMean"), f.pools ? 0 : 1);
    EXPECT_EQ(count_kernel(*e, "global_avg_pool nhwc"), f.pools ? 1 : 0);
    test::expect_agrees(g, cfg, 5);
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
  cfg.precision = fb::Precision::BF16;
  cfg.batch = 2;
  auto e = build_engine(m.graph, cfg);
  EXPECT_EQ(count_kernel(*e, "channel_gate nhwc→nhwc"), 5);
  ReferenceExecutor ref(m.graph, cfg.batch);
  auto inputs = make_inputs(m.graph, ref.input_shapes(), 6);
  e->run(inputs);
  AccuracyResult acc = compare_outputs(e->outputs(), ref.run(inputs), m.graph.outputs, default_accuracy(fb::Precision::BF16));
  EXPECT_TRUE(acc.passed) << acc.detail;
}

}  // namespace
}  // namespace fb
