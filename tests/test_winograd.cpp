// oneDNN's Winograd convolutions for the engine's float32 3x3 convolutions where they pay
// (engine/backend/cpu/conv.cpp, winograd_pays): which convolutions take them, that the
// results stay within the float32 tolerance of the reference's direct convolutions,
// captures included, that FUSEBENCH_WINOGRAD=0 keeps every convolution direct, and that
// a convolution whose weights are not constant (the reference executor's) never takes them.
#include <gtest/gtest.h>

#include <cstdlib>

#include "engine/backend/cpu/conv.h"
#include "engine/backend/cpu/dnnl_context.h"
#include "engine/passes/pass.h"
#include "harness/model_source.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

using test::count_kernel;

// A ResNet stage per width 64, 128, 256 on a 32x32 image: the 3x3 stride-1 convolutions
// of 64 and 128 channels over 32x32 and 16x16 outputs take Winograd; the stem (3 channels
// in), the stride-2 and 1x1 convolutions and the 8x8 one (64 outputs per image) do not.
const char* kResNet = "zoo:resnet?blocks=1&width=64&image=32";

// oneDNN 2.6 has float32 Winograd kernels on AVX-512 only.
bool cpu_has_winograd() { return std::string(dnnl_isa_name()).find("avx512") != std::string::npos; }

struct WinogradOff {
  WinogradOff() { setenv("FUSEBENCH_WINOGRAD", "0", 1); }
  ~WinogradOff() { unsetenv("FUSEBENCH_WINOGRAD"); }
};

TEST(Winograd, TheLarge3x3ConvolutionsTakeItAndAgreeWithTheReference) {
  LoadedModel m = load_model(kResNet);
  for (int64_t batch : {1, 3}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    BuildConfig cfg;
    cfg.batch = batch;
    cfg.fusion = FusionLevel::Aggressive;
    auto e = build_engine(m.graph, cfg);
    // At batch 3 the 8x8 convolution has 192 outputs per batch: still short of 14x14.
    const int expected = cpu_has_winograd() ? 3 : 0;
    EXPECT_EQ(count_kernel(*e, "_wino_"), expected);
    EXPECT_EQ(test::log_mentions(*e, "convolution(s) on oneDNN's Winograd kernels"), expected > 0);
    test::expect_agrees(m.graph, cfg, 5);
    test::expect_captures_agree(m.graph, cfg, 5);
  }
}

TEST(Winograd, TurnedOffEveryConvolutionIsDirectAndTheOutputsAgree) {
  LoadedModel m = load_model(kResNet);
  BuildConfig cfg;
  cfg.batch = 2;
  cfg.fusion = FusionLevel::Standard;
  auto with = build_engine(m.graph, cfg);
  std::unique_ptr<Engine> without;
  {
    WinogradOff off;
    without = build_engine(m.graph, cfg);
  }
  EXPECT_EQ(count_kernel(*without, "_wino_"), 0);
  EXPECT_FALSE(test::log_mentions(*without, "Winograd"));
  ReferenceExecutor ref(m.graph, cfg.batch);
  const auto inputs = make_inputs(m.graph, ref.input_shapes(), 9);
  with->run(inputs);
  without->run(inputs);
  const AccuracyResult acc = compare_outputs(with->outputs(), without->outputs(), m.graph.outputs, {1e-4, 1e-3});
  EXPECT_TRUE(acc.passed) << acc.detail;
}

TEST(Winograd, ConvolutionsWithoutConstantWeightsStayDirect) {
  Node node = fusebench_node("/conv", "FusedConv", {"x", "w", "b"}, {"y"});
  node.attrs["pads"] = Attribute{std::vector<int64_t>{1, 1, 1, 1}};
  const Shape x{1, 64, 32, 32}, w{64, 64, 3, 3};
  EXPECT_EQ(ConvKernel(node, x, w, true, /*constant_weights=*/false).describe().find("_wino_"), std::string::npos);
  EXPECT_EQ(ConvKernel(node, x, w, true, /*constant_weights=*/true).describe().find("_wino_") != std::string::npos,
            cpu_has_winograd());
}

}  // namespace
}  // namespace fb
