// Group normalization: the kernels (plain and channels-last) against the definition in
// double (uneven sizes, groups longer than one float summing block, a large mean),
// InstanceNormalization on it, and the group-norm-fusion pass on nn.GroupNorm as PyTorch
// exports it (Reshape, InstanceNormalization, Reshape, per-channel Mul and Add, SiLU or
// GELU): which forms fuse, which stay apart, where it runs channels-last between
// convolutions, and that every plan agrees with the reference executor.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "engine/ops/group_norm.h"
#include "engine/ops/op_registry.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/cases/calibration.h"
#include "harness/cases/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kind;

std::vector<float> random_values(size_t n, uint64_t seed, float center, float spread) {
  zoo::SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = center + rng.uniform(-spread, spread);
  return v;
}

// The definition, in double.
std::vector<float> expected_group_norm(const std::vector<float>& x, const GroupNormArgs& a) {
  std::vector<float> y(x.size());
  const int64_t per = a.channels / a.groups, len = per * a.inner;
  for (int64_t b = 0; b < a.batch; ++b)
    for (int64_t g = 0; g < a.groups; ++g) {
      const float* xb = x.data() + (b * a.groups + g) * len;
      double mean = 0, var = 0;
      for (int64_t i = 0; i < len; ++i) mean += xb[i];
      mean /= double(len);
      for (int64_t i = 0; i < len; ++i) var += (xb[i] - mean) * (xb[i] - mean);
      var /= double(len);
      for (int64_t i = 0; i < len; ++i) {
        const int64_t ch = g * per + i / a.inner;
        double v = (xb[i] - mean) / std::sqrt(var + a.epsilon);
        v = v * (a.group_scale ? a.group_scale[g] : 1.0) + (a.group_bias ? a.group_bias[g] : 0.0);
        v = v * (a.channel_scale ? a.channel_scale[ch] : 1.0) + (a.channel_bias ? a.channel_bias[ch] : 0.0);
        if (a.activation == GroupNormActivation::Silu) v = v / (1.0 + std::exp(-v));
        if (a.activation == GroupNormActivation::Gelu) v = 0.5 * v * (1.0 + std::erf(v / std::sqrt(2.0)));
        y[size_t((b * a.groups + g) * len + i)] = float(v);
      }
    }
  return y;
}

// The error float arithmetic allows the kernels, per unit of 1 + |output|, from float's ε
// and the length n of their float sums (kGroupNormSumBlock at most). Both statistics are
// sums of deviations from a shift near the mean: the mean's correction c = Σ(x - shift)/n
// and the variance (the corrected two-pass algorithm leaves no error that grows with the
// mean against the spread, as the test's values around 100 would show). A sum of n floats
// is within λ·√n·u of relative error (u = ε/2, relative to the sum of the magnitudes) with
// probability at least 1 - 2n·exp(-λ²/2) in whatever order the compiler sums (Higham and
// Mary, "A New Approach to Probabilistic Rounding Error Analysis", SIAM J. Sci. Comput.
// 41(5), 2019), where the worst case is n·u; λ = 5 makes that 97% for n = 4096. So c is
// within λ·√n·u·σ and 1/σ within λ·√n·u/2 relative: the normalized value v within
// λ·√n·u·(1 + |v|/2) ≤ λ·√n·ε/2 per unit of 1 + |v|, the parameters being of about unit
// size. Each element then takes a few roundings of its own (subtract, scale, shift, the
// activation, whose approximation is within 4e-7, about 3.4 ε): 8 ε.
float allowed_error(int64_t group_len) {
  const double n = double(std::clamp<int64_t>(group_len, 1, kGroupNormSumBlock)), lambda = 5;
  const double eps = std::numeric_limits<float>::epsilon();
  return float(eps * (lambda * std::sqrt(n) / 2 + 8));
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, float tol) {
  ASSERT_EQ(got.size(), want.size());
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double bound = tol * (1.f + std::fabs(want[i]));
    worst = std::max(worst, std::fabs(double(got[i]) - want[i]) / bound);
    ASSERT_NEAR(got[i], want[i], bound) << "element " << i << " (allowed " << tol << " per unit of 1 + |output|)";
  }
  std::printf("largest error: %.3f of the allowed %.3g per unit of 1 + |output|\n", worst, tol);
}

TEST(GroupNorm, KernelMatchesTheDefinition) {
  // 2 samples, 6 channels in 3 groups of 2, 4099 elements per channel: each group is
  // 8198 long, three float summing blocks, the last one short; the values sit around 100,
  // where one-pass variance would cancel.
  GroupNormArgs a;
  a.batch = 2, a.channels = 6, a.groups = 3, a.inner = 4099, a.epsilon = 1e-5f;
  const std::vector<float> x = random_values(size_t(a.batch * a.channels * a.inner), 1, 100.f, 3.f);
  const std::vector<float> gs = random_values(3, 2, 1.f, 0.5f), gb = random_values(3, 3, 0.f, 0.5f);
  const std::vector<float> cs = random_values(6, 4, 1.f, 0.5f), cb = random_values(6, 5, 0.f, 0.5f);
  for (int form = 0; form < 5; ++form) {
    SCOPED_TRACE(form);
    a.group_scale = form >= 1 ? gs.data() : nullptr;
    a.group_bias = form >= 1 ? gb.data() : nullptr;
    a.channel_scale = form >= 2 ? cs.data() : nullptr;
    a.channel_bias = form >= 2 ? cb.data() : nullptr;
    a.activation = form == 3 ? GroupNormActivation::Silu : form == 4 ? GroupNormActivation::Gelu : GroupNormActivation::None;
    std::vector<float> y(x.size());
    group_norm(x.data(), y.data(), a);
    expect_near_all(y, expected_group_norm(x, a), allowed_error(a.channels / a.groups * a.inner));
    std::vector<float> in_place = x;  // the arena may hand the output x's buffer
    group_norm(in_place.data(), in_place.data(), a);
    EXPECT_EQ(in_place, y);
  }
}

// [batch, channels, inner] <-> [batch, inner, channels].
std::vector<float> swap_last_two(const std::vector<float>& x, int64_t batch, int64_t rows, int64_t cols) {
  std::vector<float> y(x.size());
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) y[size_t((b * cols + c) * rows + r)] = x[size_t((b * rows + r) * cols + c)];
  return y;
}

TEST(GroupNorm, ChannelsLastKernelMatchesTheDefinition) {
  // Pixels in uneven chunks (1500 over tasks of at most 1024), and many small groups.
  struct Shape3 {
    int64_t batch, channels, groups, inner;
  };
  for (Shape3 sh : {Shape3{2, 6, 3, 1500}, Shape3{1, 64, 32, 77}, Shape3{3, 5, 5, 1}}) {
    SCOPED_TRACE(std::to_string(sh.channels) + " channels in " + std::to_string(sh.groups) + " groups");
    GroupNormArgs a;
    a.batch = sh.batch, a.channels = sh.channels, a.groups = sh.groups, a.inner = sh.inner, a.epsilon = 1e-5f;
    const std::vector<float> x = random_values(size_t(a.batch * a.channels * a.inner), 8, 50.f, 2.f);
    const std::vector<float> gs = random_values(size_t(a.groups), 9, 1.f, 0.5f), cb = random_values(size_t(a.channels), 10, 0.f, 0.5f);
    a.group_scale = gs.data();
    a.channel_bias = cb.data();
    for (GroupNormActivation act : {GroupNormActivation::None, GroupNormActivation::Silu, GroupNormActivation::Gelu}) {
      a.activation = act;
      const std::vector<float> xl = swap_last_two(x, a.batch, a.channels, a.inner);
      std::vector<float> yl(x.size());
      group_norm_channels_last(xl.data(), yl.data(), a);
      expect_near_all(swap_last_two(yl, a.batch, a.inner, a.channels), expected_group_norm(x, a),
                      allowed_error(a.channels / a.groups * a.inner));
    }
  }
}

TEST(GroupNorm, InstanceNormalizationIsOneGroupPerChannel) {
  Node n;
  n.op_type = "InstanceNormalization";
  n.name = "in";
  n.attrs["epsilon"] = Attribute{1e-3f};
  Tensor x(DType::Float32, {2, 3, 5, 7}), scale(DType::Float32, {3}), bias(DType::Float32, {3});
  const std::vector<float> xv = random_values(size_t(x.numel()), 7, -2.f, 4.f);
  std::copy(xv.begin(), xv.end(), x.data<float>());
  for (int k = 0; k < 3; ++k) scale.data<float>()[k] = 0.5f + float(k), bias.data<float>()[k] = float(k) - 1.f;
  Tensor y(DType::Float32, x.shape());
  OpContext c{n, {&x, &scale, &bias}, {&y}};
  OpRegistry::builtin()->find("", "InstanceNormalization")->compute(c);
  GroupNormArgs a;
  a.batch = 2, a.channels = a.groups = 3, a.inner = 35, a.epsilon = 1e-3f;
  a.group_scale = scale.data<float>(), a.group_bias = bias.data<float>();
  expect_near_all(std::vector<float>(y.data<float>(), y.data<float>() + y.numel()), expected_group_norm(xv, a), allowed_error(a.inner));
}

// What follows the InstanceNormalization in the test model.
struct Tail {
  std::string gamma_shape = "[C,1,1]";  // "[1,C,1,1]", "none", or "row" (a [1,1,1,W] Mul: not per channel)
  bool beta = true, silu = true;
  bool sigmoid_is_output = false;  // the SiLU's Sigmoid also a graph output
  int64_t groups = 4;
  bool gelu = false;        // GELU instead of SiLU
  bool conv_first = false;  // a convolution writes x (then the GroupNorm may run channels-last)
};

// x ─▶ Reshape [N, G, -1] ─▶ InstanceNormalization ─▶ Reshape ─▶ (Mul γ) ─▶ (Add β) ─▶ (SiLU) ─▶ Conv
Graph group_norm_model(const Tail& t) {
  zoo::OnnxBuilder b("gn", "gn");
  const int64_t c = 8, h = 5, w = 6;
  std::string x = b.input("x", {zoo::kBatch, c, h, w});
  if (t.conv_first) x = zoo::conv2d(b, "/first", "first", x, c, c, 3, 1, 1, 1, true, 1.f);
  std::string v = b.node("/gn", "Reshape", {x, b.ints("grouped", {0, t.groups, -1})});
  v = b.node("/gn", "InstanceNormalization",
             {v, b.weight("gn.s", {t.groups}, 0.3f, 1.f), b.weight("gn.b", {t.groups}, 0.3f)}, {zoo::attr_float("epsilon", 1e-5f)});
  v = b.node("/gn", "Reshape", {v, b.ints("back", {0, c, h, w})});
  if (t.gamma_shape == "[C,1,1]") v = b.node("/gn", "Mul", {v, b.weight("gamma", {c, 1, 1}, 0.5f, 1.f)});
  if (t.gamma_shape == "[1,C,1,1]") v = b.node("/gn", "Mul", {b.weight("gamma", {1, c, 1, 1}, 0.5f, 1.f), v});
  if (t.gamma_shape == "row") v = b.node("/gn", "Mul", {v, b.weight("row", {1, 1, 1, w}, 0.5f, 1.f)});
  if (t.beta) v = b.node("/gn", "Add", {v, b.weight("beta", {c, 1, 1}, 0.5f)});
  std::string s;
  if (t.gelu) v = zoo::gelu(b, "/act", v);
  if (t.silu && !t.gelu) {
    s = b.node("/act", "Sigmoid", {v});
    v = b.node("/act", "Mul", {v, s});
  }
  b.output(zoo::conv2d(b, "/conv", "conv", v, c, c, 3, 1, 1, 1, true, 1.f), "y", {zoo::kBatch, c, h, w});
  if (t.sigmoid_is_output) b.output(s, "s", {zoo::kBatch, c, h, w});
  return import_onnx(b.finish(), "gn", "");
}

TEST(GroupNorm, PyTorchsExportBecomesOneLayerWithItsSiLU) {
  for (const char* gamma : {"[C,1,1]", "[1,C,1,1]"})
    for (int64_t batch : {1, 3}) {
      SCOPED_TRACE(std::string(gamma) + " batch " + std::to_string(batch));
      Tail t;
      t.gamma_shape = gamma;
      const Graph g = group_norm_model(t);
      BuildConfig cfg;
      cfg.batch = batch;
      auto e = build_engine(g, cfg);
      ASSERT_EQ(count_kind(*e, "fusebench.GroupNorm"), 1);
      EXPECT_EQ(e->layers().size(), 2u);  // the GroupNorm and the Conv
      EXPECT_TRUE(test::log_mentions(*e, "group-norm-fusion: 7 nodes from '/gn/InstanceNormalization' → GroupNorm+silu"));
      test::expect_agrees(g, cfg, 5);
    }
}

TEST(GroupNorm, ShorterFormsFuseWhatTheyCanAndAgree) {
  struct Row {
    const char* what;
    Tail tail;
    int fused_nodes;  // nodes in the GroupNorm layer; 0: no GroupNorm
    bool silu;
  };
  auto tail = [](std::string gamma, bool beta, bool silu) {
    Tail t;
    t.gamma_shape = std::move(gamma), t.beta = beta, t.silu = silu;
    return t;
  };
  Tail read_elsewhere;
  read_elsewhere.sigmoid_is_output = true;
  Tail uneven;
  uneven.groups = 3;  // 3 does not divide 8 channels: the Reshape is not a grouping
  const Row rows[] = {
      {"no affine, no SiLU", tail("none", false, false), 3, false},
      {"shift only, SiLU", tail("none", true, true), 6, true},
      {"scale, no shift", tail("[C,1,1]", false, false), 4, false},
      {"a Mul by a row is not per channel", tail("row", true, true), 3, false},
      {"the Sigmoid read elsewhere", read_elsewhere, 5, false},
      {"groups that split a channel", uneven, 0, false},
  };
  for (const Row& r : rows) {
    SCOPED_TRACE(r.what);
    const Graph g = group_norm_model(r.tail);
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    const LayerInfo* gn = test::find_kind(*e, "fusebench.GroupNorm");
    if (r.fused_nodes == 0) {
      EXPECT_EQ(gn, nullptr);
    } else {
      ASSERT_NE(gn, nullptr);
      EXPECT_EQ(gn->sources.size(), size_t(r.fused_nodes));
      EXPECT_EQ(test::log_mentions(*e, "→ GroupNorm+silu"), r.silu);
    }
    test::expect_agrees(g, cfg, 6);
  }
}

TEST(GroupNorm, NoFusionLevelKeepsTheNodesAndAgrees) {
  const Graph g = group_norm_model(Tail{});
  BuildConfig cfg;
  cfg.fusion = FusionLevel::None;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kind(*e, "fusebench.GroupNorm"), 0);
  EXPECT_EQ(count_kind(*e, "InstanceNormalization"), 1);
  test::expect_agrees(g, cfg, 7);
}

TEST(GroupNorm, GeluAfterItIsTaken) {
  Tail t;
  t.gelu = true;
  const Graph g = group_norm_model(t);
  BuildConfig cfg;
  cfg.batch = 2;
  auto e = build_engine(g, cfg);
  EXPECT_TRUE(test::log_mentions(*e, "group-norm-fusion: 6 nodes from '/gn/InstanceNormalization' → GroupNorm+gelu"));
  EXPECT_EQ(e->layers().size(), 2u);
  test::expect_agrees(g, cfg, 13);
}

TEST(GroupNorm, BetweenConvolutionsItRunsChannelsLast) {
  for (bool gelu : {false, true}) {
    SCOPED_TRACE(gelu ? "GELU" : "SiLU");
    Tail t;
    t.conv_first = true;
    t.gelu = gelu;
    const Graph g = group_norm_model(t);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(test::count_kernel(*e, gelu ? "fusebench.group_norm+gelu channels-last" : "fusebench.group_norm+silu channels-last"), 1);
    EXPECT_EQ(test::count_kernel(*e, "nchw→nhwc"), 1);  // the first convolution; the second reads NHWC
    EXPECT_EQ(test::count_kernel(*e, "nhwc→nchw"), 1);
    test::expect_agrees(g, cfg, 14);
    EXPECT_GE(test::expect_captures_agree(g, cfg, 15).size(), 2u);
  }
}

// wav2vec2's feature encoder: Conv1d from one channel, GroupNorm with a group per channel
// (its Reshape keeps the shape), GELU, Conv1d.
Graph conv1d_group_norm() {
  zoo::OnnxBuilder b("w2v", "w2v");
  const int64_t c = 16;
  const std::string x = b.input("x", {zoo::kBatch, 1, 200});
  std::string v = b.node("/c0", "Conv", {x, b.weight("c0.w", {c, 1, 10}, 0.3f)},
                         {zoo::attr_ints("kernel_shape", {10}), zoo::attr_ints("strides", {5})});
  const int64_t t0 = (200 - 10) / 5 + 1;
  v = b.node("/gn", "Reshape", {v, b.ints("grouped", {0, c, -1})});
  v = b.node("/gn", "InstanceNormalization", {v, b.weight("gn.s", {c}, 0.f, 1.f), b.weight("gn.b", {c}, 0.f, 0.f)});
  v = b.node("/gn", "Reshape", {v, b.ints("back", {0, c, t0})});
  v = b.node("/gn", "Add", {b.node("/gn", "Mul", {v, b.weight("gamma", {c, 1}, 0.3f, 1.f)}), b.weight("beta", {c, 1}, 0.3f)});
  v = zoo::gelu(b, "/act", v);
  v = b.node("/c1", "Conv", {v, b.weight("c1.w", {c, c, 3}, 0.2f)}, {zoo::attr_ints("kernel_shape", {3}), zoo::attr_ints("strides", {1})});
  b.output(v, "y", {zoo::kBatch, c, t0 - 2});
  return import_onnx(b.finish(), "w2v", "");
}

TEST(GroupNorm, Conv1dFeatureEncoderStaysChannelsLast) {
  const Graph g = conv1d_group_norm();
  for (const char* precision : {"fp32", "bf16"}) {
    SCOPED_TRACE(precision);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.precision = fb::parse_precision(precision);
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(test::count_kernel(*e, "fusebench.group_norm+gelu channels-last"), 1);
    EXPECT_EQ(test::count_kernel(*e, "ncw→nwc"), 1);
    EXPECT_EQ(test::count_kernel(*e, "nwc→ncw"), 1);
    test::expect_engine_agrees(g, *e, cfg.batch, precision, 16);
  }
}

// zoo:wav2vec2 end to end: the feature encoder stays channels-last from its first
// convolution to the Transpose that hands [N, T, C] to the projection, at every batch and
// in the reduced precisions.
TEST(GroupNorm, Wav2vec2FeatureEncoderStaysChannelsLastEndToEnd) {
  LoadedModel m = load_model("zoo:wav2vec2");
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE(batch);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.batch = batch;
    auto e = build_engine(m.graph, cfg);
    EXPECT_EQ(test::count_kernel(*e, "fusebench.group_norm+gelu channels-last"), 1);
    EXPECT_EQ(test::count_kernel(*e, "+gelu nwc→nwc"), 6);  // convolutions 1 to 6
    const LayerInfo* view = test::find_kind(*e, "fusebench.ChannelsLastView");  // the Transpose, its bytes aliased
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(view->kernel, "view");
    test::expect_agrees(m.graph, cfg, 18);
  }
  for (const char* precision : {"bf16", "int8"}) {
    SCOPED_TRACE(precision);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.precision = fb::parse_precision(precision);
    cfg.batch = 2;
    cfg.calibration.batches = 2;
    calibrate_for_int8(m, m.graph, cfg);  // int8 only
    auto e = build_engine(m.graph, cfg);
    test::expect_engine_agrees(m.graph, *e, cfg.batch, precision, 19);
  }
}

}  // namespace
}  // namespace fb
