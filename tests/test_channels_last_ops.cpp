// Channels-last through the ops between convolutions that detectors, U-Nets and ShuffleNet
// have: Concat and Split over channels, an Add of two same-shape tensors, Resize of height
// and width, ConvTranspose, MaxPool (ours, bit for bit against the op kernel) and AveragePool,
// and ShuffleNet's channel shuffle (Reshape-Transpose-Reshape fused into one op).
// zoo:yolo and zoo:shufflenet stay channels-last from the first convolution to the last,
// agree with the reference at every precision path they take, and captures come back
// plain; what cannot stay channels-last (a Concat over another axis, a Resize of the
// channels, a value also read by a plain op) stays plain and agrees.
#include <gtest/gtest.h>

#include <cstring>
#include <limits>
#include <random>

#include "engine/backend/cpu/conv.h"
#include "engine/backend/cpu/cpu_backend.h"
#include "engine/ops/fused_conv.h"
#include "engine/ops/op_registry.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/cases/calibration.h"
#include "harness/cases/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kernel;

const char* kYolo = "zoo:yolo?classes=7&image=64";
const char* kShuffleNet = "zoo:shufflenet?classes=10&image=64&width=50";

// Layers that reorder between layouts: convolutions reading one and writing the other.
int reorders(const Engine& e) { return count_kernel(e, "nhwc→nchw") + count_kernel(e, "nchw→nhwc"); }

// Layers whose kernel names `kind` and reads and writes NHWC, whatever ISA oneDNN chose.
int channels_last_kernels(const Engine& e, const std::string& kind) {
  int n = 0;
  for (const LayerInfo& l : e.layers())
    n += l.kernel.find(kind) != std::string::npos && l.kernel.find("nhwc→nhwc") != std::string::npos;
  return n;
}

TEST(ChannelsLastOps, YoloStaysChannelsLastThroughSplitConcatAddAndResize) {
  LoadedModel m = load_model(kYolo);
  for (int64_t batch : {1, 2}) {
    BuildConfig cfg;
    cfg.batch = batch;
    cfg.fusion = FusionLevel::Aggressive;
    auto e = build_engine(m.graph, cfg);
    EXPECT_EQ(count_kernel(*e, "fusebench.split nhwc→nhwc"), 8);    // one per C2f block
    EXPECT_EQ(count_kernel(*e, "fusebench.concat nhwc→nhwc"), 13);  // 8 C2f, SPPF, 4 in the neck
    EXPECT_EQ(count_kernel(*e, "fusebench.add nhwc→nhwc"), 6);      // the backbone's bottlenecks
    EXPECT_EQ(count_kernel(*e, "fusebench.resize nhwc→nhwc"), 2);
    EXPECT_EQ(count_kernel(*e, "fusebench.max_pool nhwc→nhwc"), 3);  // SPPF's
    // Plain only where it enters (the image) and where the head's Reshape reads it.
    EXPECT_EQ(count_kernel(*e, "nchw→nhwc"), 1);
    EXPECT_EQ(count_kernel(*e, "nhwc→nchw"), 6);
    test::expect_agrees(m.graph, cfg, 3);
  }
}

TEST(ChannelsLastOps, ShuffleNetFusesTheShuffleAndStaysChannelsLast) {
  LoadedModel m = load_model(kShuffleNet);
  BuildConfig cfg;
  cfg.batch = 3;
  cfg.fusion = FusionLevel::Standard;
  auto e = build_engine(m.graph, cfg);
  EXPECT_EQ(count_kernel(*e, "fusebench.channel_shuffle nhwc→nhwc"), 16);  // after every unit
  EXPECT_EQ(test::count_kind(*e, "Transpose"), 0);
  EXPECT_EQ(count_kernel(*e, "fusebench.split nhwc→nhwc"), 13);  // the stride-1 units
  EXPECT_EQ(count_kernel(*e, "nchw→nhwc"), 1);                    // the stem
  EXPECT_EQ(count_kernel(*e, "nhwc→nchw"), 0);                    // conv5's mean is a global pool:
  EXPECT_EQ(count_kernel(*e, "fusebench.global_avg_pool nhwc"), 1);  // it reads conv5 channels-last
  EXPECT_TRUE(test::log_mentions(*e, "channel-shuffle:"));
  test::expect_agrees(m.graph, cfg, 5);
}

TEST(ChannelsLastOps, CapturesComeBackPlain) {
  for (const char* spec : {kYolo, kShuffleNet}) {
    SCOPED_TRACE(spec);
    LoadedModel m = load_model(spec);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.batch = 2;
    int tied = 0;
    for (const std::string& name : test::expect_captures_agree(m.graph, cfg, 4))
      for (const char* op : {"/Split_output", "/Concat_output", "/Resize_output", "/Add_output", "/Reshape_1_output"})
        tied += name.find(op) != std::string::npos;
    EXPECT_GE(tied, 10);
  }
}

TEST(ChannelsLastOps, ReducedPrecisionBuildsAgree) {
  for (const char* spec : {kYolo, kShuffleNet})
    for (const char* precision : {"bf16", "int8"}) {
      SCOPED_TRACE(std::string(spec) + " " + precision);
      LoadedModel m = load_model(spec);
      BuildConfig cfg;
      cfg.fusion = FusionLevel::Aggressive;
      cfg.precision = fb::parse_precision(precision);
      cfg.batch = 2;
      cfg.calibration.batches = 2;
      calibrate_for_int8(m, m.graph, cfg);  // int8 only
      auto e = build_engine(m.graph, cfg);
      EXPECT_GE(count_kernel(*e, "nhwc→nhwc"), 20);
      test::expect_engine_agrees(m.graph, *e, cfg.batch, precision, 6);
    }
}

// conv ─▶ a, conv ─▶ b, then `op` on them, then a convolution: Concat over H, a Resize of
// the channels, an Add that broadcasts, and a Concat whose input is also a graph output
// cannot stay channels-last; they and the convolutions around them stay plain and agree.
Graph two_branch_model(const std::string& what) {
  zoo::OnnxBuilder b("tied", "tied");
  const int64_t c = 16;
  const std::string x = b.input("x", {zoo::kBatch, c, 6, 6});
  const std::string a = zoo::conv2d(b, "/a", "a", x, c, c, 3, 1, 1, 1, true, 1.f);
  std::string y;
  int64_t cy = c, hy = 6;
  if (what == "concat over height") {
    y = b.node("/cat", "Concat", {a, zoo::conv2d(b, "/b", "b", x, c, c, 3, 1, 1, 1, true, 1.f)}, {zoo::attr_int("axis", 2)});
    hy = 12;
  } else if (what == "resize of channels") {
    y = b.node("/up", "Resize", {a, "", b.floats("scales", {1, 2, 1, 1})});
    cy = 2 * c;
  } else if (what == "broadcast add") {
    y = b.node("/add", "Add", {a, b.weight("row", {1, 1, 1, 6}, 0.5f)});
  } else {  // "concat read elsewhere"
    y = b.node("/cat", "Concat", {a, zoo::conv2d(b, "/b", "b", x, c, c, 3, 1, 1, 1, true, 1.f)}, {zoo::attr_int("axis", 1)});
    b.output(a, "a_out", {zoo::kBatch, c, 6, 6});
    cy = 2 * c;
  }
  y = zoo::conv2d(b, "/c", "c", y, cy, c, 1, 1, 0, 1, true, 1.f);
  b.output(y, "y", {zoo::kBatch, c, hy, 6});
  return import_onnx(b.finish(), "tied", "");
}

TEST(ChannelsLastOps, WhatCannotStayChannelsLastStaysPlainAndAgrees) {
  for (const char* what : {"concat over height", "resize of channels", "broadcast add", "concat read elsewhere"}) {
    SCOPED_TRACE(what);
    const Graph g = two_branch_model(what);
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "nhwc→nhwc"), 0);
    EXPECT_EQ(reorders(*e), 0);
    test::expect_agrees(g, cfg, 9);
  }
}

TEST(ChannelsLastOps, ConcatSplitAndShuffleCopyWholePixelsOfAnyWidth) {
  // Odd channel counts (5 + 3, split 3 + 5) and a shuffle of 3 groups, checked against the
  // reference with captures of every tied value.
  zoo::OnnxBuilder b("odd", "odd");
  const std::string x = b.input("x", {zoo::kBatch, 4, 5, 7});
  const std::string a = zoo::conv2d(b, "/a", "a", x, 4, 5, 3, 1, 1, 1, true, 1.f);
  const std::string c = zoo::conv2d(b, "/c", "c", x, 4, 3, 1, 1, 0, 1, true, 1.f);
  std::string cat = b.node("/cat", "Concat", {a, c}, {zoo::attr_int("axis", -3)});
  std::vector<std::string> halves = b.node_outputs("/split", "Split", {cat, b.ints("split", {3, 5})}, 2, {zoo::attr_int("axis", 1)});
  std::string s = zoo::conv2d(b, "/d", "d", halves[0], 3, 6, 1, 1, 0, 1, true, 1.f);
  s = b.node("/shuffle", "Reshape", {s, b.ints("s2", {0, 3, 2, 5, 7})});
  s = b.node("/shuffle", "Transpose", {s}, {zoo::attr_ints("perm", {0, 2, 1, 3, 4})});
  s = b.node("/shuffle", "Reshape", {s, b.ints("s3", {0, 6, 5, 7})});
  const std::string y = zoo::conv2d(b, "/e", "e", b.node("/join", "Concat", {s, halves[1]}, {zoo::attr_int("axis", 1)}), 11, 4, 1, 1, 0, 1,
                                    true, 1.f);
  b.output(y, "y", {zoo::kBatch, 4, 5, 7});
  const Graph g = import_onnx(b.finish(), "odd", "");
  BuildConfig cfg;
  cfg.batch = 3;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kernel(*e, "concat nhwc→nhwc"), 2);
  EXPECT_EQ(count_kernel(*e, "split nhwc→nhwc"), 1);
  EXPECT_EQ(count_kernel(*e, "channel_shuffle nhwc→nhwc"), 1);
  EXPECT_EQ(reorders(*e), 3);  // a and c read x plain, e writes y plain
  test::expect_agrees(g, cfg, 13);
}

TEST(ChannelsLastOps, LinearAndCubicResizesRunChannelsLast) {
  for (const char* mode : {"linear", "cubic", "nearest"}) {
    SCOPED_TRACE(mode);
    zoo::OnnxBuilder b("up", "up");
    const std::string x = b.input("x", {zoo::kBatch, 5, 6, 4});
    std::string y = zoo::conv2d(b, "/a", "a", x, 5, 9, 3, 1, 1, 1, true, 1.f);
    y = b.node("/up", "Resize", {y, "", b.floats("scales", {1, 1, 2.f, 1.5f})},
               {zoo::attr_string("mode", mode)});
    y = zoo::conv2d(b, "/b", "b", y, 9, 3, 1, 1, 0, 1, true, 1.f);
    b.output(y, "y", {zoo::kBatch, 3, 12, 6});
    const Graph g = import_onnx(b.finish(), "up", "");
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "fusebench.resize nhwc→nhwc"), 1);
    test::expect_agrees(g, cfg, 17);
  }
}

// A U-Net step: conv ─▶ skip, MaxPool, conv, ConvTranspose 2x2/2 (or `attrs`) back up,
// Concat with the skip, conv.
Graph unet_step(const std::vector<zoo::Attr>& up_attrs, int64_t up_channels_per_group, int64_t group, int64_t kernel = 2) {
  zoo::OnnxBuilder b("unet", "unet");
  const int64_t c = 12;
  const std::string x = b.input("x", {zoo::kBatch, 3, 8, 10});
  const std::string skip = zoo::conv2d(b, "/d0", "d0", x, 3, c, 3, 1, 1, 1, true, 1.f);
  std::string y = b.node("/pool", "MaxPool", {skip}, {zoo::attr_ints("kernel_shape", {2, 2}), zoo::attr_ints("strides", {2, 2})});
  y = zoo::conv2d(b, "/mid", "mid", y, c, 2 * c, 3, 1, 1, 1, true, 1.f);
  y = b.node("/up", "ConvTranspose",
             {y, b.weight("up.w", {2 * c, up_channels_per_group, kernel, kernel}, 0.3f), b.weight("up.b", {up_channels_per_group * group}, 0.1f)},
             up_attrs);
  y = b.node("/cat", "Concat", {skip, y}, {zoo::attr_int("axis", 1)});
  y = zoo::conv2d(b, "/d1", "d1", y, c + up_channels_per_group * group, 4, 3, 1, 1, 1, true, 1.f);
  b.output(y, "y", {zoo::kBatch, 4, 8, 10});
  return import_onnx(b.finish(), "unet", "");
}

TEST(ChannelsLastOps, AUNetStepStaysChannelsLastThroughConvTranspose) {
  const Graph g = unet_step({zoo::attr_ints("kernel_shape", {2, 2}), zoo::attr_ints("strides", {2, 2})}, 12, 1);
  for (int64_t batch : {1, 3}) {
    BuildConfig cfg;
    cfg.batch = batch;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "onednn.deconv["), 1);
    EXPECT_EQ(channels_last_kernels(*e, "onednn.deconv["), 1);
    EXPECT_EQ(count_kernel(*e, "concat nhwc→nhwc"), 1);
    EXPECT_EQ(reorders(*e), 2);  // the image in, y out
    test::expect_agrees(g, cfg, 21);
  }
  BuildConfig cfg;
  cfg.batch = 2;
  int compared = 0;
  for (const std::string& name : test::expect_captures_agree(g, cfg, 22)) compared += name.find("/up/") != std::string::npos;
  EXPECT_EQ(compared, 1);
}

TEST(ChannelsLastOps, ConvTransposeWithGroupsOrAnExtendingOutputShapeAgrees) {
  // Groups and output_padding on oneDNN's layer, channels-last; an output_shape beyond what
  // the operation yields stays on the op's kernel (which fills the rest with the bias), plain.
  const Graph grouped = unet_step({zoo::attr_ints("kernel_shape", {2, 2}), zoo::attr_ints("strides", {2, 2}), zoo::attr_int("group", 3)},
                                  2, 3);
  const Graph padded = unet_step({zoo::attr_ints("kernel_shape", {2, 2}), zoo::attr_ints("strides", {2, 2}),
                                  zoo::attr_ints("pads", {1, 1, 0, 0}), zoo::attr_ints("output_padding", {1, 1})},
                                 12, 1);
  // A 1x1 kernel at stride 2 yields 7x9 from 4x5; output_shape asks for 8x10.
  const Graph extended = unet_step({zoo::attr_ints("kernel_shape", {1, 1}), zoo::attr_ints("strides", {2, 2}),
                                    zoo::attr_ints("output_shape", {8, 10})},
                                   12, 1, 1);
  for (const Graph* g : {&grouped, &padded, &extended}) {
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(*g, cfg);
    EXPECT_EQ(count_kernel(*e, "onednn.deconv["), g == &extended ? 0 : 1);
    test::expect_agrees(*g, cfg, 23);
  }
}

// conv ─▶ AveragePool(attrs) ─▶ conv, a DenseNet transition; oneDNN runs the pool, and
// channels-last where `channels_last`.
TEST(ChannelsLastOps, AveragePoolsRunOnOneDnnAndChannelsLastWhereTheyCan) {
  struct Pool {
    const char* what;
    std::vector<zoo::Attr> attrs;
    int64_t out_h, out_w;
    bool onednn;
  };
  const std::vector<Pool> pools = {
      {"2x2/2", {zoo::attr_ints("kernel_shape", {2, 2}), zoo::attr_ints("strides", {2, 2})}, 4, 5, true},
      {"3x3/2 padded, pads counted",
       {zoo::attr_ints("kernel_shape", {3, 3}), zoo::attr_ints("strides", {2, 2}), zoo::attr_ints("pads", {1, 1, 1, 1}),
        zoo::attr_int("count_include_pad", 1)},
       4, 5, true},
      // MaxViT's downsampling after its explicit Pad: no window reads the last row or column.
      {"3x3/2 unpadded over an even size", {zoo::attr_ints("kernel_shape", {3, 3}), zoo::attr_ints("strides", {2, 2})}, 3, 4, true},
      {"3x3/2 ceil_mode, pads not counted",
       {zoo::attr_ints("kernel_shape", {3, 3}), zoo::attr_ints("strides", {2, 2}), zoo::attr_int("ceil_mode", 1)}, 4, 5, true},
      {"3x3/2 ceil_mode, pads counted (the op's kernel)",
       {zoo::attr_ints("kernel_shape", {3, 3}), zoo::attr_ints("strides", {2, 2}), zoo::attr_ints("pads", {1, 1, 1, 1}),
        zoo::attr_int("ceil_mode", 1), zoo::attr_int("count_include_pad", 1)},
       5, 6, false},
  };
  for (const Pool& p : pools) {
    SCOPED_TRACE(p.what);
    zoo::OnnxBuilder b("avg", "avg");
    const std::string x = b.input("x", {zoo::kBatch, 3, 8, 10});
    std::string y = zoo::conv2d(b, "/a", "a", x, 3, 16, 3, 1, 1, 1, true, 1.f);
    y = b.node("/pool", "AveragePool", {y}, p.attrs);
    y = zoo::conv2d(b, "/b", "b", y, 16, 4, 1, 1, 0, 1, true, 1.f);
    b.output(y, "y", {zoo::kBatch, 4, p.out_h, p.out_w});
    const Graph g = import_onnx(b.finish(), "avg", "");
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "onednn.pool_avg["), p.onednn ? 1 : 0);
    EXPECT_EQ(channels_last_kernels(*e, "pool_avg["), p.onednn ? 1 : 0);
    test::expect_agrees(g, cfg, 25);
  }
}

// A DenseNet's first layers as torchvision writes them: stem convolution and max pool, then
// per layer Concat(features) ─▶ BatchNormalization ─▶ Relu ─▶ 1x1 Conv ─▶ BN ─▶ Relu ─▶ 3x3 Conv.
// The first Concat has one input. `last_relu_is_output`: the last pre-activation's Relu
// output is also a graph output.
Graph dense_layers(bool last_relu_is_output) {
  zoo::OnnxBuilder b("dense", "dense");
  std::string x = b.input("x", {zoo::kBatch, 3, 16, 16});
  x = zoo::conv2d(b, "/stem", "stem", x, 3, 16, 3, 2, 1, 1, true, 1.f);
  x = b.node("/stem", "MaxPool", {x}, {zoo::attr_ints("kernel_shape", {2, 2}), zoo::attr_ints("strides", {2, 2})});
  std::vector<std::string> features{x};
  int64_t c = 16;
  std::string relu;
  for (int i = 0; i < 2; ++i) {
    const std::string sc = "/l" + std::to_string(i);
    std::string t = b.node(sc, "Concat", features, {zoo::attr_int("axis", 1)});
    relu = b.node(sc, "Relu", {zoo::batch_norm(b, sc + "/n1", sc + ".n1", t, c)});
    t = zoo::conv2d(b, sc + "/c1", sc + ".c1", relu, c, 24, 1, 1, 0, 1, false, 1.f);
    t = b.node(sc, "Relu", {zoo::batch_norm(b, sc + "/n2", sc + ".n2", t, 24)});
    features.push_back(zoo::conv2d(b, sc + "/c2", sc + ".c2", t, 24, 8, 3, 1, 1, 1, false, 1.f));
    c += 8;
  }
  const std::string y = b.node("/cat", "Concat", features, {zoo::attr_int("axis", 1)});
  b.output(zoo::conv2d(b, "/head", "head", y, c, 4, 1, 1, 0, 1, true, 1.f), "y", {zoo::kBatch, 4, 4, 4});
  if (last_relu_is_output) b.output(relu, "relu", {zoo::kBatch, 24, 4, 4});
  return import_onnx(b.finish(), "dense", "");
}

TEST(ChannelsLastOps, DenseNetPreActivationIsOneChannelsLastAffine) {
  const Graph g = dense_layers(false);
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE(batch);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.batch = batch;
    auto e = build_engine(g, cfg);
    // Each layer's first BN-ReLU (the second folds into the 1x1 convolution).
    EXPECT_EQ(count_kernel(*e, "fusebench.channel_affine+relu nhwc→nhwc"), 2);
    EXPECT_EQ(test::count_kind(*e, "BatchNormalization"), 0);
    EXPECT_TRUE(test::log_mentions(*e, "identity-elimination: removed '/l0/Concat' (Concat)"));
    EXPECT_EQ(count_kernel(*e, "fusebench.concat nhwc→nhwc"), 2);
    EXPECT_EQ(count_kernel(*e, "nchw→nhwc"), 1);  // the stem reads the plain input
    test::expect_agrees(g, cfg, 26);
  }
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.batch = 2;
  int affines = 0;
  for (const std::string& name : test::expect_captures_agree(g, cfg, 27)) affines += name.find("/Relu_output") != std::string::npos;
  EXPECT_GE(affines, 2);
}

TEST(ChannelsLastOps, AnAffineWhoseReluIsAlsoAnOutputStaysPlainAndAgrees) {
  const Graph g = dense_layers(true);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.batch = 2;
  auto e = build_engine(g, cfg);
  // The second affine writes a graph output, so it reads plain; its Concat shares its
  // layout with the stem's pool, which the first affine reads: the whole tied region is plain.
  EXPECT_EQ(count_kernel(*e, "fusebench.channel_affine"), 0);
  EXPECT_EQ(test::count_kind(*e, "fusebench.ChannelAffine"), 2);
  test::expect_agrees(g, cfg, 28);
}

// Our channels-last MaxPool (backend/cpu/channels_last_layers.cpp) against the op table's
// kernel on the same values, bit for bit: windows of the shapes models use and the odd ones
// (dilations, pads on one side, ceil_mode, windows wholly in the padding), channel counts
// either side of its 16- and 64-lane blocks, and NaNs and infinities scattered so that the
// order of comparisons shows.
TEST(ChannelsLastOps, OurMaxPoolGivesTheOpKernelsValuesBitForBit) {
  struct Window {
    const char* what;
    std::vector<int64_t> kernel, strides, pads, dilations;
    int64_t ceil_mode;
  };
  const std::vector<Window> windows = {
      {"3x3/1 pad 1 (an inception branch)", {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, 0},
      {"3x3/2 (a stem)", {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0},
      {"3x3/2 ceil_mode (GoogLeNet, SqueezeNet)", {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 1},
      {"5x5/1 pad 2 (YOLO's SPPF)", {5, 5}, {1, 1}, {2, 2, 2, 2}, {1, 1}, 0},
      {"2x3/(1,2), pads 1,0 before and 0,2 after", {2, 3}, {1, 2}, {1, 0, 0, 2}, {1, 1}, 0},
      {"3x2 dilated (2,3), pad 2", {3, 2}, {1, 1}, {2, 2, 2, 2}, {2, 3}, 0},
      {"1x1 with 2 pads after: windows wholly in the padding", {1, 1}, {1, 1}, {0, 0, 2, 2}, {1, 1}, 0},
  };
  std::mt19937 rng(7);
  std::normal_distribution<float> normal(0.f, 1.f);
  std::uniform_int_distribution<int> pick(0, 99);
  const float inf = std::numeric_limits<float>::infinity();
  const CpuBackend cpu;
  for (const Window& w : windows)
    for (int64_t c : {1, 5, 16, 37, 64, 100, 131}) {
      SCOPED_TRACE(std::string(w.what) + ", " + std::to_string(c) + " channels");
      Node n;
      n.name = "/pool";
      n.op_type = "MaxPool";
      n.opset = 17;
      n.inputs = {"x"};
      n.outputs = {"y"};
      n.attrs = {{"kernel_shape", Attribute{w.kernel}}, {"strides", Attribute{w.strides}}, {"pads", Attribute{w.pads}},
                 {"dilations", Attribute{w.dilations}}, {"ceil_mode", Attribute{w.ceil_mode}}};
      Tensor x(DType::Float32, {2, c, 7, 9});
      for (int64_t i = 0; i < x.numel(); ++i) {
        const int r = pick(rng);
        x.data<float>()[i] = r < 3 ? std::nanf("") : r < 5 ? inf : r < 7 ? -inf : normal(rng);
      }
      const Tensor want = evaluate_node(n, {&x}).at(0);
      // The same values channels-last, under the same logical shape.
      Tensor x_nhwc(DType::Float32, x.shape()), y_nhwc(DType::Float32, want.shape());
      const int64_t hw = 7 * 9;
      for (int64_t b = 0; b < 2; ++b)
        for (int64_t k = 0; k < c; ++k)
          for (int64_t p = 0; p < hw; ++p) x_nhwc.data<float>()[(b * hw + p) * c + k] = x.data<float>()[(b * c + k) * hw + p];
      n.attrs["x_layout"] = Attribute{std::string(kChannelsLast)};
      n.attrs["y_layout"] = Attribute{std::string(kChannelsLast)};
      std::unique_ptr<Layer> layer =
          cpu.make_layer(LayerRequest{n, op_for(n), *OpRegistry::builtin(), {&x_nhwc}, {&y_nhwc}, {false}});
      EXPECT_EQ(layer->kernel(), "fusebench.max_pool nhwc→nhwc");
      layer->run();
      const Tensor got = layer->plain_copy(y_nhwc);
      ASSERT_EQ(got.shape(), want.shape());
      int lowest = 0;
      for (int64_t i = 0; i < want.numel(); ++i) {
        const float g = got.data<float>()[i], e = want.data<float>()[i];
        lowest += e == std::numeric_limits<float>::lowest();
        ASSERT_EQ(std::memcmp(&g, &e, sizeof g), 0) << "element " << i << ": " << g << " against " << e;
      }
      if (w.pads == std::vector<int64_t>{0, 0, 2, 2}) {
        EXPECT_GT(lowest, 0);  // the case did reach the padding
      }
    }
}

TEST(ChannelsLastOps, ADenseNetInReducedPrecisionAgrees) {
  const Graph g = dense_layers(false);
  for (const char* precision : {"bf16", "int8"}) {
    SCOPED_TRACE(precision);
    LoadedModel m;
    m.graph = g;
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.precision = fb::parse_precision(precision);
    cfg.batch = 2;
    cfg.calibration.batches = 2;
    calibrate_for_int8(m, g, cfg);  // int8 only
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "channel_affine"), 2);
    test::expect_engine_agrees(g, *e, cfg.batch, precision, 29);
  }
}

// The host reorders a device backend uses for its weights (KCRS → KRSC) and captures:
// element (n, c, s) of a plain [N, C, S...] tensor lies at (n·S + s)·C + c channels-last,
// for rank 3 to 5 and any element size, and the two are each other's inverse.
TEST(ChannelsLastOps, HostReordersPutEachChannelLastAndBack) {
  for (const Shape& shape : {Shape{2, 3, 5}, Shape{2, 3, 2, 4}, Shape{1, 4, 2, 3, 2}}) {
    Tensor plain = Tensor::empty(DType::Float32, shape);
    for (int64_t i = 0; i < plain.numel(); ++i) plain.data<float>()[i] = float(i);
    const Tensor last = plain_to_channels_last(plain);
    ASSERT_EQ(last.shape(), shape);
    const int64_t n = shape[0], c = shape[1], s = plain.numel() / (n * c);
    for (int64_t b = 0; b < n; ++b)
      for (int64_t k = 0; k < c; ++k)
        for (int64_t p = 0; p < s; ++p)
          EXPECT_EQ(last.data<float>()[(b * s + p) * c + k], plain.data<float>()[(b * c + k) * s + p]) << shape_str(shape);
    const Tensor back = channels_last_to_plain(last);
    EXPECT_EQ(std::memcmp(back.raw(), plain.raw(), plain.nbytes()), 0) << shape_str(shape);
    Tensor half = Tensor::empty(DType::Float16, shape);
    for (int64_t i = 0; i < half.numel(); ++i) static_cast<uint16_t*>(half.raw())[i] = uint16_t(i);
    const Tensor half_back = channels_last_to_plain(plain_to_channels_last(half));
    EXPECT_EQ(std::memcmp(half_back.raw(), half.raw(), half.nbytes()), 0) << shape_str(shape);
  }
}

}  // namespace
}  // namespace fb
