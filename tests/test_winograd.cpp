// oneDNN's Winograd convolutions for the engine's float32 3x3 convolutions where they pay
// (engine/backend/cpu/conv.cpp, winograd_pays): which convolutions take them, that the
// results stay within the float32 tolerance of the reference's direct convolutions,
// captures included, that the build setting (BuildConfig::winograd; a scenario's
// "winograd": false, --no-winograd) keeps every convolution direct and is part of the case
// key and the plan, and that a convolution whose weights are not constant (the reference
// executor's) never takes them. The engine's eager region runs its constant-weight
// convolutions on kept kernels too.
#include <gtest/gtest.h>

#include <set>

#include "engine/backend/cpu/conv.h"
#include "engine/backend/cpu/dnnl_context.h"
#include "engine/onnx/onnx_import.h"
#include "engine/passes/pass.h"
#include "engine/plan/build_config_json.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/cases/case_fields.h"
#include "harness/cases/model_source.h"
#include "harness/cases/scenario.h"
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

BuildConfig without_winograd(BuildConfig c) {
  c.winograd = false;
  return c;
}

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
  auto without = build_engine(m.graph, without_winograd(cfg));
  EXPECT_EQ(count_kernel(*without, "_wino_"), 0);
  EXPECT_FALSE(test::log_mentions(*without, "convolution(s) on oneDNN's Winograd kernels"));
  EXPECT_TRUE(test::log_mentions(*without, "Winograd convolutions off (build setting)"));
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
  auto winograd = [&](bool constant_weights, bool may_use_winograd) {
    return ConvKernel(node, x, w, true, constant_weights, nullptr, false, may_use_winograd).describe().find("_wino_") !=
           std::string::npos;
  };
  EXPECT_FALSE(winograd(false, true));
  EXPECT_FALSE(winograd(true, false));
  EXPECT_EQ(winograd(true, true), cpu_has_winograd());
}

// x [N, 64, 12, 12] ─ Compress(images whose mean is positive) ─ Conv 3x3 64→64 + Relu ─▶ y:
// the convolution reads a data-dependent batch, so it runs in the eager region, over the
// engine's constant weights.
Graph conv_after_compress() {
  zoo::OnnxBuilder b("compress_conv", "compress_conv");
  const std::string x = b.input("x", {zoo::kBatch, 64, 12, 12});
  const std::string mean = b.node("/mean", "ReduceMean", {x}, {zoo::attr_ints("axes", {1, 2, 3}), zoo::attr_int("keepdims", 0)});
  const std::string keep = b.node("/keep", "Greater", {mean, b.scalar("zero", 0.f)});
  const std::string kept = b.node("/compress", "Compress", {x, keep}, {zoo::attr_int("axis", 0)});
  const std::string conv = b.node("/conv", "Conv", {kept, b.weight("w", {64, 64, 3, 3}, 0.1f), b.weight("b", {64}, 0.1f)},
                                  {zoo::attr_ints("pads", {1, 1, 1, 1})});
  b.output(b.node("/relu", "Relu", {conv}), "y", {zoo::kBatch, 64, 12, 12});
  return import_onnx(b.finish(), "compress_conv", "");
}

TEST(Winograd, TheEagerRegionsConstantWeightConvolutionsTakeItPerInputShape) {
  const Graph g = conv_after_compress();
  BuildConfig cfg;
  cfg.batch = 8;
  auto with = build_engine(g, cfg);
  ASSERT_NE(test::find_kind(*with, "fusebench.EagerRegion"), nullptr);
  auto without = build_engine(g, without_winograd(cfg));
  ReferenceExecutor ref(g, cfg.batch);
  std::set<int64_t> batches;
  for (uint64_t seed : {1, 2, 3, 1}) {  // other images kept, then the first shape again
    SCOPED_TRACE("seed " + std::to_string(seed));
    const auto inputs = make_inputs(g, ref.input_shapes(), seed);
    const auto expected = ref.run(inputs);
    batches.insert(expected[0].shape()[0]);
    with->run(inputs);
    without->run(inputs);
    ASSERT_EQ(with->outputs()[0].shape(), expected[0].shape());
    const AccuracyResult acc = compare_outputs(with->outputs(), expected, g.outputs, {1e-4, 1e-3});
    EXPECT_TRUE(acc.passed) << acc.detail;
    // Winograd's rounding shows that the kept kernel ran (the reference's is direct);
    // without it the kept direct kernel gives the reference's bytes.
    if (cpu_has_winograd() && expected[0].shape()[0] >= 2) {
      EXPECT_GT(acc.max_abs_err, 0.0);
    }
    const AccuracyResult direct = compare_outputs(without->outputs(), expected, g.outputs, {0, 0});
    EXPECT_EQ(direct.max_abs_err, 0.0) << direct.detail;
  }
  EXPECT_GE(batches.size(), 2u) << "the seeds must keep different numbers of images";
}

// The setting is a case's and a plan's, not the process's: two runs of one scenario that
// differ in it are two cases, and a plan rebuilds its layers with the setting it was built with.
TEST(Winograd, TheSettingIsPartOfTheCaseKeyAndThePlan) {
  const Scenario plain = parse_scenario(R"({"model": "zoo:mlp", "matrix": {"batch": [1]}})", "s.json");
  const Scenario off = parse_scenario(R"({"model": "zoo:mlp", "matrix": {"batch": [1]}, "winograd": false})", "s.json");
  const Scenario on = parse_scenario(R"({"model": "zoo:mlp", "matrix": {"batch": [1]}, "winograd": true})", "s.json");
  const CaseSpec a = expand_cases(plain)[0], b = expand_cases(off)[0], c = expand_cases(on)[0];
  EXPECT_TRUE(a.winograd);
  EXPECT_FALSE(b.winograd);
  // Allowed (the default) keeps the key and stored config cases had before the setting.
  EXPECT_EQ(c.case_key(), a.case_key());
  EXPECT_FALSE(a.to_json().contains("winograd"));
  EXPECT_NE(b.case_key(), a.case_key());
  EXPECT_EQ(b.label(), "s b=1 fp32 standard t=1 no-winograd");
  EXPECT_EQ(CaseSpec::from_json(b.to_json()), b);
  EXPECT_TRUE(build_config_of(a).winograd);
  EXPECT_FALSE(build_config_of(b).winograd);
  try {
    parse_scenario(R"({"model": "zoo:mlp", "winograd": "no"})", "bad.json");
    ADD_FAILURE() << "a string for winograd was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("field 'winograd': expected true or false, got \"no\""), std::string::npos) << e.what();
  }

  EXPECT_FALSE(build_config_from_json(build_config_to_json(without_winograd(BuildConfig{}))).winograd);
  nlohmann::json older = build_config_to_json(BuildConfig{});
  older.erase("winograd");  // a plan written before the setting ran with Winograd allowed
  EXPECT_TRUE(build_config_from_json(older).winograd);
}

}  // namespace
}  // namespace fb
