// Convolution fusions: the residual Add (and Relu) folded into the convolution as oneDNN's
// sum post-op, and channels-last activations kept between convolutions. Each fires where
// it should, stops where it must, and the plans agree with the reference executor (which
// runs every node plainly), captures included.
#include <gtest/gtest.h>

#include "engine/zoo/onnx_builder.h"
#include "harness/cases/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kernel;

using test::count_kind;
using test::log_mentions;

const char* kResnet = "zoo:resnet?blocks=2&image=16&stages=2&width=16";

// x ─▶ Conv(a) ─▶ Add(·, residual) ─▶ Relu, with `residual` one of three kinds, and Conv(a)'s
// output optionally also a graph output. Channels: `c` in and out.
enum class Residual { Input, Conv, Broadcast };
Graph residual_block(int64_t c, Residual kind, bool conv_output_is_graph_output = false) {
  zoo::OnnxBuilder b("block", "block");
  const std::string x = b.input("x", {zoo::kBatch, c, 6, 6});
  const std::string a = zoo::conv2d(b, "/a", "a", x, c, c, 3, 1, 1, 1, true, 1.f);
  std::string r = x;
  if (kind == Residual::Conv) r = zoo::conv2d(b, "/down", "down", x, c, c, 1, 1, 0, 1, false, 1.f);
  if (kind == Residual::Broadcast) r = b.weight("per_channel", {c, 1, 1}, 1.f);
  const std::string s = b.node("/add", "Add", {a, r});
  std::string y = b.node("/relu", "Relu", {s});
  y = zoo::conv2d(b, "/b", "b", y, c, c, 3, 1, 1, 1, true, 1.f);
  b.output(y, "y", {zoo::kBatch, c, 6, 6});
  if (conv_output_is_graph_output) b.output(a, "a", {zoo::kBatch, c, 6, 6});
  return import_onnx(b.finish(), "block", "");
}

TEST(ConvFusion, ResnetResidualAddAndReluBecomeSumPostOps) {
  LoadedModel m = load_model(kResnet);
  BuildConfig cfg;
  cfg.batch = 2;
  auto e = build_engine(m.graph, cfg);
  // Every block's Add and second Relu went into its second convolution.
  EXPECT_EQ(count_kind(*e, "Add"), 0);
  EXPECT_EQ(count_kind(*e, "Relu"), 0);
  EXPECT_EQ(count_kind(*e, "fusebench.ElementwiseChain"), 0);
  EXPECT_EQ(count_kernel(*e, "+sum+relu"), 4);  // 2 stages x 2 blocks
  const LayerInfo* fused = nullptr;
  for (const LayerInfo& l : e->layers())
    if (l.kernel.find("+sum+relu") != std::string::npos) fused = &l;
  ASSERT_NE(fused, nullptr);
  // The fused layer lists the conv, its BatchNorm, the Add and the Relu as sources.
  EXPECT_EQ(fused->sources.size(), 4u);
  EXPECT_TRUE(log_mentions(*e, "conv-residual-fusion: Conv+sum+relu"));
  test::expect_agrees(m.graph, cfg);
}

TEST(ConvFusion, ResnetKeepsChannelsLastBetweenConvolutions) {
  LoadedModel m = load_model(kResnet);
  BuildConfig cfg;
  cfg.batch = 2;
  auto e = build_engine(m.graph, cfg);
  int convs = 0;
  for (const LayerInfo& l : e->layers()) convs += l.kind == "fusebench.FusedConv" || l.kind == "Conv";
  // Only the stem reads a plain input; every tensor after it stays channels-last, the
  // last convolution's too (GlobalAveragePool reads it as it lies).
  EXPECT_EQ(count_kernel(*e, "nhwc→nhwc"), convs - 1);
  EXPECT_EQ(count_kernel(*e, "nchw→nhwc"), 1);
  EXPECT_EQ(count_kernel(*e, "nhwc→nchw"), 0);
  EXPECT_EQ(count_kernel(*e, "fusebench.global_avg_pool nhwc"), 1);
  EXPECT_TRUE(log_mentions(*e, "conv-layout: '"));
  test::expect_agrees(m.graph, cfg);
  for (int64_t batch : {1, 3}) {  // odd batches too
    cfg.batch = batch;
    test::expect_agrees(m.graph, cfg, 5);
  }
}

// resnet's stem: Conv -> MaxPool -> a residual block whose shortcut is the pool's output.
// The pool reads and writes channels-last, so nothing between the stem and the block's last
// convolution is reordered; results and captures agree with the reference.
TEST(ConvFusion, AMaxPoolBetweenConvolutionsKeepsChannelsLast) {
  zoo::OnnxBuilder b("stem", "stem");
  const int64_t c = 16;
  const std::string x = b.input("x", {zoo::kBatch, 3, 13, 13});
  const std::string stem = zoo::conv2d(b, "/stem", "stem", x, 3, c, 3, 1, 1, 1, true, 1.f);
  const std::string pool = b.node("/pool", "MaxPool", {stem},
                                  {zoo::attr_ints("kernel_shape", {3, 3}), zoo::attr_ints("strides", {2, 2}),
                                   zoo::attr_ints("pads", {1, 1, 1, 1})});
  const std::string a = zoo::conv2d(b, "/a", "a", pool, c, c, 3, 1, 1, 1, true, 1.f);
  const std::string bb = zoo::conv2d(b, "/b", "b", a, c, c, 3, 1, 1, 1, false, 1.f);
  const std::string y = b.node("/relu", "Relu", {b.node("/add", "Add", {bb, pool})});
  b.output(y, "y", {zoo::kBatch, c, 7, 7});
  const Graph g = import_onnx(b.finish(), "stem", "");
  for (int64_t batch : {1, 3}) {
    BuildConfig cfg;
    cfg.batch = batch;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "fusebench.max_pool nhwc→nhwc"), 1);  // ours, channels-last
    EXPECT_EQ(count_kernel(*e, "nchw→nhwc"), 1);    // the stem reads the plain input
    EXPECT_EQ(count_kernel(*e, "+sum+relu nhwc→nchw"), 1);  // the block's residual from the pool, channels-last
    test::expect_agrees(g, cfg, 5);
    // A capture sees the pool's output in plain layout.
    ReferenceExecutor ref(g, batch);
    const std::vector<Tensor> inputs = make_inputs(g, ref.input_shapes(), 3);
    const std::map<std::string, Tensor> captured = e->run_capture(inputs);
    ASSERT_TRUE(captured.count(pool));
    const AccuracyResult acc = compare_outputs({captured.at(pool)}, {ref.run_all(inputs).at(pool)}, {pool}, {1e-4, 1e-3});
    EXPECT_TRUE(acc.passed) << acc.detail;
  }
  // Excluded from fusion, the pool runs plain and the stem writes plain for it.
  BuildConfig excluded;
  excluded.exclude_op_types = {"MaxPool"};
  auto e = build_engine(g, excluded);
  EXPECT_EQ(count_kernel(*e, "onednn.pool_max["), 1);
  for (const LayerInfo& l : e->layers())
    if (l.kind == "MaxPool") {
      EXPECT_EQ(l.kernel.find("nhwc"), std::string::npos) << l.kernel;
    }
  test::expect_agrees(g, excluded, 5);
}

TEST(ConvFusion, CaptureOfAChannelsLastPlanSeesPlainTensors) {
  LoadedModel m = load_model(kResnet);
  BuildConfig cfg;
  auto e = build_engine(m.graph, cfg);
  ReferenceExecutor ref(m.graph, 1);
  auto inputs = make_inputs(m.graph, ref.input_shapes(), 3);
  auto all_ref = ref.run_all(inputs);
  auto captured = e->run_capture(inputs);
  int compared = 0;
  for (const auto& [name, t] : captured) {
    if (!all_ref.count(name)) continue;  // values that only exist in the fused plan
    AccuracyResult acc = compare_outputs({t}, {all_ref.at(name)}, {name}, {1e-4, 1e-3});
    EXPECT_TRUE(acc.passed) << name << ": " << acc.detail;
    ++compared;
  }
  EXPECT_GT(compared, 8);
}

TEST(ConvFusion, ResidualFromAnotherConvolutionOrTheInput) {
  for (Residual kind : {Residual::Input, Residual::Conv}) {
    Graph g = residual_block(16, kind);
    BuildConfig cfg;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "+sum+relu"), 1);
    EXPECT_EQ(count_kind(*e, "Add"), 0);
    test::expect_agrees(g, cfg);
  }
  // The residual from a convolution: the 1x1 convolution writes it channels-last for the
  // sum, and the fused layer writes channels-last for the convolution after it.
  Graph g = residual_block(16, Residual::Conv);
  auto e = build_engine(g, BuildConfig{});
  EXPECT_EQ(count_kernel(*e, "+sum+relu nchw→nhwc"), 1);
  EXPECT_EQ(count_kernel(*e, "nchw→nhwc"), 2);  // the 1x1 convolution and the fused one
  EXPECT_EQ(count_kernel(*e, "nhwc→nchw"), 1);  // the last convolution writes the graph output
}

TEST(ConvFusion, OddChannelCountsAndNoBiasStillAgree) {
  for (int64_t c : {3, 5}) {
    Graph g = residual_block(c, Residual::Conv);
    BuildConfig cfg;
    cfg.batch = 3;
    test::expect_agrees(g, cfg);
  }
}

TEST(ConvFusion, BroadcastResidualIsLeftToTheElementwiseKernel) {
  Graph g = residual_block(8, Residual::Broadcast);
  BuildConfig cfg;
  cfg.batch = 2;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kernel(*e, "+sum"), 0);
  EXPECT_FALSE(log_mentions(*e, "conv-residual-fusion: Conv+"));
  // The Add+Relu chain reads the first conv's output: that one stays plain.
  EXPECT_EQ(count_kernel(*e, "nhwc"), 0);
  test::expect_agrees(g, cfg);
}

TEST(ConvFusion, GraphOutputsPartitionPointsAndExclusionsStayPlain) {
  {  // The conv output is also a graph output: no sum (the Add is not its only reader).
    Graph g = residual_block(8, Residual::Input, true);
    auto e = build_engine(g, BuildConfig{});
    EXPECT_EQ(count_kernel(*e, "+sum"), 0);
    test::expect_agrees(g, BuildConfig{});
  }
  {  // The Add excluded by op type: neither fusion crosses it.
    Graph g = residual_block(8, Residual::Conv);
    BuildConfig cfg;
    cfg.exclude_op_types = {"Add"};
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kind(*e, "Add"), 1);
    EXPECT_EQ(count_kernel(*e, "+sum"), 0);
    test::expect_agrees(g, cfg);
  }
  {  // A partition point on the Relu's output: the sum fuses, the layout stays plain there.
    Graph g = residual_block(8, Residual::Conv);
    BuildConfig cfg;
    cfg.partition_points = {"/relu/Relu_output_0"};
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "+sum+relu nchw→nchw"), 1);
    EXPECT_EQ(count_kernel(*e, "→nhwc"), 1);  // only the residual the sum reads
    test::expect_agrees(g, cfg);
  }
  {  // Excluding the second conv by name keeps its input plain.
    Graph g = residual_block(8, Residual::Conv);
    BuildConfig cfg;
    cfg.exclude_nodes = {"/b/*"};
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "→nchw"), 2);  // the fused block conv and /b itself
    test::expect_agrees(g, cfg);
  }
}

TEST(ConvFusion, NoFusionLevelRunsEveryNodePlainly) {
  LoadedModel m = load_model(kResnet);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::None;
  auto e = build_engine(m.graph, cfg);
  EXPECT_EQ(e->layers().size(), m.graph.nodes.size());
  EXPECT_EQ(count_kernel(*e, "nhwc"), 0);
  EXPECT_EQ(count_kernel(*e, "+sum"), 0);
}

// The stem of torchvision's resnets: MaxPool on oneDNN's pooling primitive, with and
// without ceil_mode (a far pad beyond the attributes' pads), agreeing with the op table.
TEST(ConvFusion, MaxPoolAfterTheStemRunsOnOneDnnAndAgrees) {
  for (int64_t ceil_mode : {0, 1}) {
    zoo::OnnxBuilder b("stem", "stem");
    const std::string x = b.input("x", {zoo::kBatch, 3, 16, 16});
    std::string y = zoo::conv2d(b, "/conv1", "conv1", x, 3, 16, 3, 1, 1, 1, true, 1.f);
    y = b.node("/relu", "Relu", {y});
    y = b.node("/maxpool", "MaxPool", {y},
               {zoo::attr_int("ceil_mode", ceil_mode), zoo::attr_ints("kernel_shape", {3, 3}), zoo::attr_ints("pads", {1, 1, 1, 1}),
                zoo::attr_ints("strides", {2, 2})});
    const int64_t side = ceil_mode ? 9 : 8;
    b.output(y, "y", {zoo::kBatch, 16, side, side});
    Graph g = import_onnx(b.finish(), "stem", "");
    for (FusionLevel level : {FusionLevel::None, FusionLevel::Standard}) {
      BuildConfig cfg;
      cfg.fusion = level;
      cfg.batch = 2;
      auto e = build_engine(g, cfg);
      EXPECT_EQ(count_kernel(*e, "onednn.pool_max"), 1) << "ceil_mode " << ceil_mode;
      test::expect_agrees(g, cfg);
    }
  }
}

TEST(ConvFusion, DepthwiseAndGroupedConvolutionsAgree) {
  LoadedModel m = load_model("zoo:mobilenet");
  for (FusionLevel level : {FusionLevel::Standard, FusionLevel::Aggressive}) {
    BuildConfig cfg;
    cfg.fusion = level;
    cfg.batch = 2;
    test::expect_agrees(m.graph, cfg);
  }
}

// An audio model's Conv1d stem (Whisper's): Conv, GELU, Conv(stride 2), GELU, then the
// features handed on as [N, T, C]. `transpose_perm` is the last Transpose's.
Graph conv1d_stem(const std::vector<int64_t>& transpose_perm, bool tanh_gelu = false) {
  zoo::OnnxBuilder b("stem", "stem");
  const int64_t c = 12, t = 20;
  const std::string x = b.input("x", {zoo::kBatch, 5, t});
  auto conv = [&](const std::string& sc, const std::string& in, int64_t cin, int64_t stride) {
    return b.node(sc, "Conv", {in, b.weight(sc + ".w", {c, cin, 3}, 0.3f), b.weight(sc + ".b", {c}, 0.1f)},
                  {zoo::attr_ints("kernel_shape", {3}), zoo::attr_ints("pads", {1, 1}), zoo::attr_ints("strides", {stride})});
  };
  // GELU with tanh, as GPT-2 writes it: 0.5 x (1 + tanh(√(2/π) (x + 0.044715 x³))).
  auto gelu_tanh = [&](const std::string& sc, const std::string& v) {
    std::string cube = b.node(sc, "Mul", {b.node(sc, "Mul", {v, v}), v});
    std::string inner = b.node(sc, "Add", {v, b.node(sc, "Mul", {cube, b.scalar("k", 0.044715f)})});
    std::string th = b.node(sc, "Tanh", {b.node(sc, "Mul", {inner, b.scalar("s", 0.7978845608f)})});
    return b.node(sc, "Mul", {b.node(sc, "Mul", {v, b.scalar("half", 0.5f)}), b.node(sc, "Add", {th, b.scalar("one", 1.f)})});
  };
  auto act = [&](const std::string& sc, const std::string& v) { return tanh_gelu ? gelu_tanh(sc, v) : zoo::gelu(b, sc, v); };
  std::string v = act("/g1", conv("/c1", x, 5, 1));
  v = act("/g2", conv("/c2", v, c, 2));
  const bool moves_channels = transpose_perm == std::vector<int64_t>{0, 2, 1};
  v = b.node("/perm", "Transpose", {v}, {zoo::attr_ints("perm", transpose_perm)});
  b.output(v, "y", moves_channels ? std::vector<int64_t>{zoo::kBatch, t / 2, c} : std::vector<int64_t>{t / 2, zoo::kBatch, c});
  return import_onnx(b.finish(), "stem", "");
}

TEST(ConvFusion, Conv1dStemTakesGeluAndStaysChannelsLastIntoItsTranspose) {
  for (bool tanh_gelu : {false, true})
    for (int64_t batch : {1, 2}) {
      SCOPED_TRACE(std::string(tanh_gelu ? "tanh GELU" : "erf GELU") + ", batch " + std::to_string(batch));
      const Graph g = conv1d_stem({0, 2, 1}, tanh_gelu);
      BuildConfig cfg;
      cfg.fusion = FusionLevel::Aggressive;
      cfg.batch = batch;
      auto e = build_engine(g, cfg);
      ASSERT_EQ(e->layers().size(), 3u);
      EXPECT_EQ(count_kernel(*e, tanh_gelu ? "+gelu_tanh" : "+gelu ncw→nwc"), tanh_gelu ? 2 : 1);
      EXPECT_EQ(count_kernel(*e, "nwc→nwc"), 1);
      const LayerInfo* view = test::find_kind(*e, "fusebench.ChannelsLastView");  // the Transpose, its bytes aliased
      ASSERT_NE(view, nullptr);
      EXPECT_EQ(view->kernel, "view");
      test::expect_agrees(g, cfg, 8);
      test::expect_captures_agree(g, cfg, 9);
    }
}

// A ViT's patch embedding: Conv (patch 4, stride 4), Reshape to [N, C, H·W], Transpose to
// [N, H·W, C], then a LayerNorm. `flat_shape` is the Reshape's target; `flat_is_output`
// makes the flattened tensor a graph output too.
Graph patch_embedding(const std::vector<int64_t>& flat_shape, bool flat_is_output) {
  zoo::OnnxBuilder b("patches", "patches");
  const int64_t c = 16;
  const std::string x = b.input("x", {zoo::kBatch, 3, 16, 16});
  std::string v = b.node("/proj", "Conv", {x, b.weight("proj.w", {c, 3, 4, 4}, 0.3f), b.weight("proj.b", {c}, 0.1f)},
                         {zoo::attr_ints("kernel_shape", {4, 4}), zoo::attr_ints("strides", {4, 4})});
  std::string flat = b.node("/flatten", "Reshape", {v, b.ints("flat_shape", flat_shape)});
  if (flat_is_output) {
    b.output(flat, "flat", {zoo::kBatch, flat_shape[1], flat_shape[2]});  // renames the value
    flat = "flat";
  }
  v = b.node("/tokens", "Transpose", {flat}, {zoo::attr_ints("perm", {0, 2, 1})});
  v = zoo::layer_norm(b, "/ln", "ln", v, flat_shape[1]);
  b.output(v, "y", {zoo::kBatch, flat_shape[2], flat_shape[1]});
  return import_onnx(b.finish(), "patches", "");
}

TEST(ConvFusion, PatchEmbeddingFlattenAndTransposeAreOneViewOfAChannelsLastConv) {
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE(batch);
    const Graph g = patch_embedding({0, 16, 16}, false);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.batch = batch;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(count_kernel(*e, "nchw→nhwc"), 1);
    const LayerInfo* view = test::find_kind(*e, "fusebench.ChannelsLastView");
    ASSERT_NE(view, nullptr);
    EXPECT_EQ(view->kernel, "view");
    EXPECT_EQ(view->sources, (std::vector<std::string>{"/flatten/Reshape", "/tokens/Transpose"}));
    EXPECT_EQ(count_kind(*e, "Reshape") + count_kind(*e, "Transpose"), 0);
    test::expect_agrees(g, cfg, 11);
    test::expect_captures_agree(g, cfg, 12);
  }
  // Left alone: the Transpose held in fp32 while the rest runs bf16 (the two cannot be one
  // layer), the flattened tensor a graph output too, or the Reshape keeping W apart.
  {
    const Graph g = patch_embedding({0, 16, 16}, false);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.batch = 2;
    cfg.precision = fb::Precision::BF16;
    cfg.layer_precisions = {{"/tokens/Transpose", fb::Precision::FP32}};
    auto e = build_engine(g, cfg);
    EXPECT_EQ(test::find_kind(*e, "fusebench.ChannelsLastView"), nullptr);
  }
  for (bool flat_is_output : {true, false}) {
    SCOPED_TRACE(flat_is_output ? "flattened tensor is an output" : "Reshape to [N, C·H, W]");
    const Graph g = flat_is_output ? patch_embedding({0, 16, 16}, true) : patch_embedding({0, 64, 4}, false);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    EXPECT_EQ(test::find_kind(*e, "fusebench.ChannelsLastView"), nullptr);
    EXPECT_EQ(count_kernel(*e, "nchw→nchw"), 1);
    test::expect_agrees(g, cfg, 13);
  }
}

TEST(ConvFusion, ATransposeThatDoesNotMoveChannelsLastReadsAPlainTensor) {
  const Graph g = conv1d_stem({2, 0, 1});
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.batch = 2;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kernel(*e, "nwc→ncw"), 1);  // the second convolution writes plain for it
  EXPECT_EQ(test::find_kind(*e, "fusebench.ChannelsLastView"), nullptr);
  test::expect_agrees(g, cfg, 10);
}

TEST(ConvFusion, Conv1dStemInReducedPrecisionAgrees) {
  const Graph g = conv1d_stem({0, 2, 1});
  for (const char* precision : {"bf16", "fp16"}) {
    SCOPED_TRACE(precision);
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.precision = fb::parse_precision(precision);
    cfg.batch = 2;
    auto e = build_engine(g, cfg);
    test::expect_engine_agrees(g, *e, cfg.batch, precision, 12);
  }
}

// A one-channel tensor between 1-D convolutions (an audio model's waveform): in a bare
// oneDNN call with a one-channel nwc source and an nwc destination, oneDNN 2.6 here chose
// its reference loops (hundreds of times slower); the engine's convolutions get brgconv.
// This keeps it so.
TEST(ConvFusion, AOneChannelTensorBetweenConvolutionsGetsNoReferenceKernel) {
  zoo::OnnxBuilder b("one", "one");
  const std::string x = b.input("x", {zoo::kBatch, 4, 400});
  std::string v = b.node("/a", "Conv", {x, b.weight("a.w", {1, 4, 3}, 0.3f)}, {zoo::attr_ints("kernel_shape", {3})});
  v = b.node("/b", "Conv", {v, b.weight("b.w", {8, 1, 10}, 0.3f)}, {zoo::attr_ints("kernel_shape", {10}), zoo::attr_ints("strides", {5})});
  v = b.node("/c", "Conv", {v, b.weight("c.w", {8, 8, 3}, 0.3f)}, {zoo::attr_ints("kernel_shape", {3})});
  b.output(v, "y", {zoo::kBatch, 8, 76});
  const Graph g = import_onnx(b.finish(), "one", "");
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.batch = 2;
  auto e = build_engine(g, cfg);
  EXPECT_EQ(count_kernel(*e, "[ref"), 0);
  EXPECT_EQ(count_kernel(*e, "nwc→nwc"), 1);
  test::expect_agrees(g, cfg, 17);
}

}  // namespace
}  // namespace fb
