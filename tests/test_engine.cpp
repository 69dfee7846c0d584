// The engine against the reference executor: every zoo model, every fusion level, batch
// 1 and 3, on identical seeded inputs. Tolerance: fused kernels reorder float sums
// (oneDNN post-ops, single-pass LayerNorm), so agreement is to 1e-4 absolute on outputs
// of order 1 — a wrong fusion is off by far more.
#include <gtest/gtest.h>

#include "engine/builder/builder.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "engine/zoo/zoo.h"
#include "harness/accuracy.h"
#include "harness/inputs.h"
#include "harness/model_source.h"

namespace fb {
namespace {

struct Param {
  std::string model;
  std::string fusion;
  int64_t batch;
};

void PrintTo(const Param& p, std::ostream* os) { *os << p.model << " " << p.fusion << " b=" << p.batch; }

std::string param_name(const testing::TestParamInfo<Param>& p) {
  std::string m = p.param.model.substr(4, p.param.model.find('?') - 4);
  return m + "_" + p.param.fusion + "_b" + std::to_string(p.param.batch);
}

class EngineVsReference : public testing::TestWithParam<Param> {};

TEST_P(EngineVsReference, OutputsAgree) {
  const Param& p = GetParam();
  LoadedModel m = load_model(p.model);
  BuildConfig cfg;
  cfg.fusion = parse_fusion_level(p.fusion);
  cfg.batch = p.batch;
  cfg.threads = 2;
  ThreadScope threads(2);
  threads.run([&] {
    auto engine = build_engine(m.graph, cfg);
    ReferenceExecutor ref(m.graph, p.batch);
    auto inputs = make_inputs(m.graph, ref.input_shapes(), 7);
    auto expected = ref.run(inputs);
    engine->run(inputs);
    AccuracyResult acc = compare_outputs(engine->outputs(), expected, m.graph.outputs, {1e-4, 1e-3});
    EXPECT_TRUE(acc.passed) << acc.detail;
    EXPECT_GT(acc.cosine, 0.99999);
    // A second run on the same arena gives the same answer (no state leaks between runs).
    engine->run(inputs);
    AccuracyResult again = compare_outputs(engine->outputs(), expected, m.graph.outputs, {1e-4, 1e-3});
    EXPECT_TRUE(again.passed) << again.detail;
    if (cfg.fusion == FusionLevel::None) EXPECT_EQ(engine->layers().size(), m.graph.nodes.size());
    else EXPECT_LT(engine->layers().size(), m.graph.nodes.size());
  });
}

std::vector<Param> all_params() {
  std::vector<Param> r;
  const std::vector<std::string> models = {"zoo:mlp?hidden=64&in=32&layers=2&out=8",
                                           "zoo:bert?heads=2&hidden=32&layers=2&seq=8",
                                           "zoo:resnet?blocks=1&image=16&stages=2&width=8",
                                           "zoo:mobilenet?blocks=3&image=16&width=8",
                                           "zoo:vit?hidden=32&heads=2&image=16&layers=1&patch=4"};
  for (const std::string& m : models)
    for (const char* f : {"none", "standard"})
      for (int64_t b : {1, 3}) r.push_back({m, f, b});
  return r;
}

INSTANTIATE_TEST_SUITE_P(Zoo, EngineVsReference, testing::ValuesIn(all_params()), param_name);

TEST(EngineBuild, BertStandardFusesEveryPatternAndKeepsSources) {
  LoadedModel m = load_model("zoo:bert");
  BuildConfig cfg;
  auto engine = build_engine(m.graph, cfg);
  int layernorms = 0, residual_layernorms = 0, fused_matmuls = 0, gelu_matmuls = 0;
  size_t sources = 0;
  for (const LayerInfo& l : engine->layers()) {
    layernorms += l.kind == "fusebench.LayerNorm";
    residual_layernorms += l.kind == "fusebench.AddLayerNorm";
    fused_matmuls += l.kind == "fusebench.FusedMatMul";
    gelu_matmuls += l.kernel == "onednn.matmul+bias+gelu";
    EXPECT_FALSE(l.sources.empty()) << l.name;
    sources += l.sources.size();
  }
  EXPECT_EQ(layernorms, 1);           // the embedding's
  EXPECT_EQ(residual_layernorms, 4);  // 2 per layer, each with its residual Add
  EXPECT_EQ(fused_matmuls, 12);   // q, k, v, out, ffn1, ffn2 per layer
  EXPECT_EQ(gelu_matmuls, 2);     // GELU folded into the first FFN matmul
  EXPECT_EQ(sources, m.graph.nodes.size());  // every ONNX node accounted for exactly once
}

TEST(EngineBuild, ArenaReusesMemory) {
  LoadedModel m = load_model("zoo:mlp?hidden=256&in=256&layers=4&out=256");
  BuildConfig cfg;
  cfg.fusion = FusionLevel::None;
  cfg.batch = 4;
  auto engine = build_engine(m.graph, cfg);
  // 4 hidden layers × 3 activations each of 4×256 floats if nothing were reused.
  const size_t unplanned = 4 * 3 * 4 * 256 * 4;
  EXPECT_LT(engine->arena_bytes(), unplanned / 2);
}

TEST(EngineBuild, RejectsWrongInputShape) {
  LoadedModel m = load_model("zoo:mlp");
  BuildConfig cfg;
  cfg.batch = 2;
  auto engine = build_engine(m.graph, cfg);
  std::vector<Tensor> bad{Tensor(DType::Float32, {3, 256})};
  try {
    engine->run(bad);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'input' must be float32[2,256]"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace fb
