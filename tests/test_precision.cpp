// Precision as a build setting: bf16 and fp16 builds keep 16-bit tensors between layers
// and stay close to the fp32 reference; per-layer constraints hold (obey fails naming
// the layer, prefer falls back and says why); an int8 build where no layer can run in int8
// is refused rather than run as fp32 (tests/test_int8.cpp tests int8 itself).
// Tolerances: cosine >= 0.999 for bf16/fp16, issue 12's bar; a bf16 value carries 8
// significant bits, so elementwise errors of ~1e-2 on O(1) outputs are expected.
#include <gtest/gtest.h>

#include <limits>

#include "engine/ops/half_float.h"
#include "engine/zoo/onnx_builder.h"
#include "harness/cases/model_source.h"
#include "harness/cases/scenario.h"
#include "tests/pass_test_support.h"

namespace fb {
namespace {

const char* kBert = "zoo:bert?heads=2&hidden=64&layers=1&seq=16";

AccuracyResult against_reference(const LoadedModel& m, const BuildConfig& cfg, Engine& e) {
  ReferenceExecutor ref(m.graph, cfg.batch);
  auto inputs = make_inputs(m.graph, ref.input_shapes(), 7);
  auto expected = ref.run(inputs);
  e.run(inputs);
  return compare_outputs(e.outputs(), expected, m.graph.outputs, default_accuracy(cfg.precision));
}

int layers_in(const Engine& e, const std::string& precision) {
  int n = 0;
  for (const LayerInfo& l : e.layers()) n += fb::precision_name(l.precision) == precision;
  return n;
}

TEST(Precision, Bf16BuildKeepsSixteenBitTensorsAndMeetsCosine) {
  for (FusionLevel level : {FusionLevel::None, FusionLevel::Standard, FusionLevel::Aggressive}) {
    LoadedModel m = load_model(kBert);
    BuildConfig cfg;
    cfg.fusion = level;
    cfg.batch = 2;
    cfg.precision = fb::Precision::BF16;
    auto e = build_engine(m.graph, cfg);
    SCOPED_TRACE(fusion_level_name(level));
    int bf16_values = 0;
    for (const auto& [name, v] : e->graph().values) bf16_values += v.dtype == DType::BFloat16;
    EXPECT_GT(bf16_values, 5);
    EXPECT_GT(layers_in(*e, "bf16"), int(e->layers().size()) / 2);
    EXPECT_GE(test::count_kind(*e, "fusebench.Convert"), 2);  // into bf16 and back to the f32 output
    EXPECT_TRUE(test::log_mentions(*e, "oneDNN dispatches to"));
    for (const Tensor& t : e->outputs()) EXPECT_EQ(t.dtype(), DType::Float32);
    AccuracyResult acc = against_reference(m, cfg, *e);
    EXPECT_TRUE(acc.passed) << acc.detail;
    EXPECT_GE(acc.cosine, 0.999);
    EXPECT_GT(acc.max_abs_err, 0.0);  // it really rounded: bf16 cannot match fp32 exactly
  }
}

// ViT adds its position embedding (a float32 constant) to the bf16 patch embeddings inside
// an AddLayerNorm at batch 1: the 16-bit kernel reads the constant as it is.
TEST(Precision, SixteenBitAddLayerNormTakesAFloat32Constant) {
  LoadedModel m = load_model("zoo:vit");
  for (const char* precision : {"bf16", "fp16"}) {
    BuildConfig cfg;
    cfg.fusion = FusionLevel::Aggressive;
    cfg.precision = fb::parse_precision(precision);
    auto e = build_engine(m.graph, cfg);
    const LayerInfo* aln = test::find_kind(*e, "fusebench.AddLayerNorm");
    ASSERT_NE(aln, nullptr);
    EXPECT_EQ(aln->precision, fb::parse_precision(precision));
    AccuracyResult acc = against_reference(m, cfg, *e);
    EXPECT_TRUE(acc.passed) << precision << ": " << acc.detail;
  }
}

TEST(Precision, Fp16BuildMeetsCosine) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.precision = fb::Precision::FP16;
  auto e = build_engine(m.graph, cfg);
  EXPECT_GT(layers_in(*e, "fp16"), 0);
  AccuracyResult acc = against_reference(m, cfg, *e);
  EXPECT_TRUE(acc.passed) << acc.detail;
}

TEST(Precision, ConstraintKeepsMatchedNodesFp32) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::None;
  cfg.precision = fb::Precision::BF16;
  cfg.layer_precisions = {{"Softmax", fb::Precision::FP32}, {"*/LayerNorm/*", fb::Precision::FP32}};
  auto e = build_engine(m.graph, cfg);
  int softmax = 0, layernorm = 0;
  for (const LayerInfo& l : e->layers()) {
    if (l.kind == "Softmax") {
      ++softmax;
      EXPECT_EQ(l.precision, fb::Precision::FP32);
      EXPECT_EQ(l.precision_reason, "constraint 'Softmax'");
    }
    if (l.name.find("/LayerNorm/") != std::string::npos && l.kind != "fusebench.Convert") {
      ++layernorm;
      EXPECT_EQ(l.precision, fb::Precision::FP32) << l.name;
    }
    if (l.kind == "MatMul") {
      EXPECT_EQ(l.precision, fb::Precision::BF16) << l.name;
    }
  }
  EXPECT_GT(softmax, 0);
  EXPECT_GT(layernorm, 0);
  EXPECT_TRUE(test::log_mentions(*e, "precision constraint 'Softmax' = fp32"));
  EXPECT_TRUE(against_reference(m, cfg, *e).passed);
}

// Fusion never runs a constrained node in another precision: a fused layer that took a
// Softmax constrained to fp32 runs in fp32 and says why.
TEST(Precision, FusionKeepsAConstrainedNodeInItsPrecision) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::Aggressive;
  cfg.precision = fb::Precision::BF16;
  cfg.layer_precisions = {{"Softmax", fb::Precision::FP32}};
  auto e = build_engine(m.graph, cfg);
  int with_softmax = 0;
  for (const LayerInfo& l : e->layers())
    for (const std::string& s : l.sources)
      if (s.find("/Softmax") != std::string::npos) {
        ++with_softmax;
        EXPECT_EQ(l.precision, fb::Precision::FP32) << l.name << ": " << l.precision_reason;
      }
  EXPECT_EQ(with_softmax, 1);
  EXPECT_TRUE(against_reference(m, cfg, *e).passed);
}

// A 16-bit Softmax over its innermost axis reads and writes 16-bit rows itself; over
// another axis it widens the tensor around the float32 kernel. Both stay close.
TEST(Precision, SixteenBitSoftmaxReadsRowsOverTheInnermostAxisOnly) {
  zoo::OnnxBuilder b("softmax", "softmax");
  const std::string x = b.input("x", {zoo::kBatch, 4, 16});
  const std::string rows = b.node("/rows", "Softmax", {x}, {zoo::attr_int("axis", -1)});
  const std::string cols = b.node("/cols", "Softmax", {rows}, {zoo::attr_int("axis", 1)});
  b.output(cols, "y", {zoo::kBatch, 4, 16});
  const Graph g = import_onnx(b.finish(), "softmax", "");
  for (const char* precision : {"bf16", "fp16"}) {
    BuildConfig cfg;
    cfg.precision = fb::parse_precision(precision);
    cfg.batch = 3;
    auto e = build_engine(g, cfg);
    for (const LayerInfo& l : e->layers()) {
      if (l.kind != "Softmax") continue;
      EXPECT_EQ(l.precision, cfg.precision);
      const bool widened = l.kernel.find("→f32") != std::string::npos;
      EXPECT_EQ(widened, l.name == "/cols/Softmax") << l.name << ": " << l.kernel;
    }
    ReferenceExecutor ref(g, cfg.batch);
    auto inputs = make_inputs(g, ref.input_shapes(), 5);
    e->run(inputs);
    AccuracyResult acc = compare_outputs(e->outputs(), ref.run(inputs), g.outputs, default_accuracy(fb::parse_precision(precision)));
    EXPECT_TRUE(acc.passed) << precision << ": " << acc.detail;
    EXPECT_GE(acc.cosine, 0.9999) << precision;
  }
}

TEST(Precision, ObeyFailsNamingTheLayerPreferFallsBack) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.fusion = FusionLevel::None;
  cfg.layer_precisions = {{"Softmax", fb::Precision::INT8}};
  cfg.precision_mode = PrecisionMode::Obey;
  try {
    build_engine(m.graph, cfg);
    FAIL() << "obey must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(Softmax)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no int8 kernel for Softmax"), std::string::npos) << e.what();
  }
  cfg.precision_mode = PrecisionMode::Prefer;
  auto e = build_engine(m.graph, cfg);
  const LayerInfo* s = test::find_kind(*e, "Softmax");
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->precision, fb::Precision::FP32);
  EXPECT_EQ(s->precision_reason, "fallback from int8: no int8 kernel for Softmax");
  EXPECT_TRUE(test::log_mentions(*e, "falls back to fp32"));
}

TEST(Precision, ObeyRefusesAConstraintThatMatchesNothing) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.layer_precisions = {{"/no/such/*", fb::Precision::FP32}};
  cfg.precision_mode = PrecisionMode::Obey;
  EXPECT_THROW(build_engine(m.graph, cfg), Error);
}

TEST(Precision, Int8BuildWithoutCalibrationIsRefusedNotRunAsFp32) {
  LoadedModel m = load_model(kBert);
  BuildConfig cfg;
  cfg.precision = fb::Precision::INT8;  // no int8_ranges: no matrix product has a threshold
  try {
    build_engine(m.graph, cfg);
    FAIL() << "an int8 build with no int8 layer must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no layer can run in int8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("no calibration ranges"), std::string::npos) << e.what();
  }
  // An unknown precision cannot reach a build: it is refused where it is read, the names in one order.
  try {
    parse_precision("fp8", "--precision");
    FAIL() << "fp8 was accepted";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "--precision: unknown precision 'fp8' (known: fp32, tf32, bf16, fp16, int8)");
  }
}

TEST(Precision, BulkConversionsRoundToNearestEven) {
  const float in[] = {1.0f, 1.00390625f /* 1 + 2^-8: tie, stays 1 */, 1.01171875f /* 1 + 3·2^-8: tie, up */, -2.5f,
                      65504.f, 1e-8f, 3.14159265f, 0.f, -0.f};
  const int n = int(sizeof(in) / sizeof(float));
  for (DType t : {DType::BFloat16, DType::Float16}) {
    uint16_t h[16];
    float back[16];
    narrow_16(t, in, h, n);
    widen_16(t, h, back, n);
    for (int i = 0; i < n; ++i) {
      const uint16_t scalar = t == DType::BFloat16 ? float_to_bfloat16(in[i]) : float_to_half(in[i]);
      EXPECT_EQ(h[i], scalar) << dtype_name(t) << " " << in[i];
      EXPECT_EQ(back[i], t == DType::BFloat16 ? bfloat16_to_float(scalar) : half_to_float(scalar));
    }
  }
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(1.00390625f)), 1.0f);
  EXPECT_EQ(bfloat16_to_float(float_to_bfloat16(1.01171875f)), 1.015625f);
}

TEST(PrecisionScenario, ConstraintsAndPerPrecisionAccuracyAreRead) {
  Scenario s = parse_scenario(R"({"model": "zoo:bert",
    "matrix": {"precision": ["fp32", "bf16", "fp16"]},
    "accuracy": {"atol": 1e-4, "bf16": {"min_cosine": 0.995}},
    "precision_constraints": {"mode": "obey", "layers": {"Softmax": "fp32", "/encoder/*/LayerNorm*": "fp32"}}})",
                              "");
  ASSERT_EQ(s.settings.precision_constraints.layers.size(), 2u);
  EXPECT_EQ(s.settings.precision_constraints.layers[0].pattern, "Softmax");  // file order kept
  EXPECT_EQ(s.settings.precision_constraints.mode, "obey");
  std::vector<CaseSpec> cases = expand_cases(s);
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_TRUE(cases[0].accuracy.elementwise);
  EXPECT_FALSE(cases[0].accuracy.min_cosine.has_value());
  EXPECT_FALSE(cases[1].accuracy.elementwise);
  EXPECT_EQ(cases[1].accuracy.min_cosine.value(), 0.995);
  EXPECT_EQ(cases[2].accuracy.min_cosine.value(), 0.999);  // default for fp16
  EXPECT_EQ(cases[1].precision_constraints.layers, s.settings.precision_constraints.layers);
  // Constraints are part of the case key; the stored config round-trips them.
  CaseSpec plain = cases[1];
  plain.precision_constraints = {};
  EXPECT_NE(cases[1].case_key(), plain.case_key());
  CaseSpec back = CaseSpec::from_json(cases[1].to_json());
  EXPECT_EQ(back.precision_constraints.layers, cases[1].precision_constraints.layers);
  EXPECT_EQ(back.accuracy.min_cosine, cases[1].accuracy.min_cosine);
  EXPECT_EQ(back.case_key(), cases[1].case_key());
}

TEST(PrecisionScenario, BadFieldsAreNamed) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {R"({"model":"zoo:mlp","precision_constraints":{"layers":{"Softmax":"fp64"}}})",
       "field 'precision_constraints.layers.Softmax': unknown precision 'fp64'"},
      {R"({"model":"zoo:mlp","precision_constraints":{"mode":"strict","layers":{"Softmax":"fp32"}}})",
       "field 'precision_constraints.mode'"},
      {R"({"model":"zoo:mlp","precision_constraints":{"layers":{}}})", "field 'precision_constraints.layers': must not be empty"},
      {R"({"model":"zoo:mlp","accuracy":{"bf16":{"min_cosine":2}}})", "field 'accuracy.bf16.min_cosine'"},
      {R"({"model":"zoo:mlp","accuracy":{"int4":{}}})", "unknown field 'accuracy.int4'"},
      {R"({"model":"zoo:mlp","matrix":{"precision":["int4"]}})", "precision 'int4' is not supported"},
  };
  for (const auto& [text, want] : bad) {
    try {
      parse_scenario(text, "x.json");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST(PrecisionAccuracy, CosineBelowMinimumFails) {
  Tensor ref(DType::Float32, {4}), eng(DType::Float32, {4});
  const float r[] = {1, 2, 3, 4}, e[] = {1, 2, 3, -4};
  std::copy(r, r + 4, ref.data<float>());
  std::copy(e, e + 4, eng.data<float>());
  AccuracyResult a = compare_outputs({eng}, {ref}, {"y"}, default_accuracy(fb::Precision::BF16));
  EXPECT_FALSE(a.passed);
  EXPECT_NEAR(a.cosine, -2.0 / 30.0, 1e-9);  // (1 + 4 + 9 - 16) / (|r|·|e| = 30)
  EXPECT_NE(a.detail.find("cosine similarity"), std::string::npos) << a.detail;
  EXPECT_TRUE(compare_outputs({ref}, {ref}, {"y"}, default_accuracy(fb::Precision::BF16)).passed);
}

// A reduced-precision tolerance is a cosine, which skips what is not finite: an fp16
// overflow to inf or a NaN the reference does not have must still fail, naming the
// element; the same inf or NaN on both sides agrees, under either tolerance.
TEST(PrecisionAccuracy, ANonFiniteValueOnOneSideFailsEitherTolerance) {
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  auto tensor = [](std::vector<float> v) {
    Tensor t(DType::Float32, {static_cast<int64_t>(v.size())});
    std::copy(v.begin(), v.end(), t.data<float>());
    return t;
  };
  const Tensor ref = tensor({1, 2, 3, 4, 5, 6, 7, 8});
  for (const char* precision : {"fp32", "bf16", "fp16", "int8"})
    for (float bad : {inf, -inf, nan}) {
      SCOPED_TRACE(std::string(precision) + " " + std::to_string(bad));
      const AccuracyResult a = compare_outputs({tensor({1, 2, 3, 4, 5, bad, 7, 8})}, {ref}, {"y"}, default_accuracy(fb::parse_precision(precision)));
      EXPECT_FALSE(a.passed);
      EXPECT_NE(a.detail.find("output 'y' element 5: engine"), std::string::npos) << a.detail;
      EXPECT_NE(a.detail.find("non-finite value on one side only"), std::string::npos) << a.detail;
      EXPECT_DOUBLE_EQ(a.cosine, 1.0);  // the finite elements still agree
      EXPECT_EQ(a.max_abs_err, 0.0);
      // The reference's own inf or NaN, matched, agrees; against another value it does not.
      const Tensor both = tensor({1, 2, 3, 4, 5, bad, 7, 8});
      EXPECT_TRUE(compare_outputs({both}, {both}, {"y"}, default_accuracy(fb::parse_precision(precision))).passed);
      EXPECT_FALSE(compare_outputs({ref}, {both}, {"y"}, default_accuracy(fb::parse_precision(precision))).passed);
    }
  EXPECT_FALSE(compare_outputs({tensor({inf})}, {tensor({-inf})}, {"y"}, default_accuracy(fb::Precision::FP32)).passed);
}

}  // namespace
}  // namespace fb
