// The engine against the reference executor: every zoo model, every fusion level, batch
// 1 and 3, on identical seeded inputs. Tolerance: fused kernels reorder float sums
// (oneDNN post-ops, single-pass LayerNorm), so agreement is to 1e-4 absolute on outputs
// of order 1 — a wrong fusion is off by far more.
#include <gtest/gtest.h>

#include <cstring>
#include <thread>

#include "engine/backend/cpu/shared_weights.h"
#include "engine/builder/builder.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "engine/zoo/zoo.h"
#include "harness/cases/accuracy.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"

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

// Execution contexts (Engine::make_context, a load case's pool) run concurrently, each on
// its own thread scope, and give the engine's outputs; they share the engine's weights in
// the kernels' layouts too: packed matmul weights and blocked convolution filters exist
// once, however many contexts read them, and go with the last layer that reads them.
TEST(ExecutionContexts, RunConcurrentlyAndShareReorderedWeights) {
  for (const char* model : {"zoo:bert", "zoo:resnet"}) {
    SCOPED_TRACE(model);
    const LoadedModel m = load_model(model);
    BuildConfig cfg;
    cfg.batch = 2;
    cfg.fusion = FusionLevel::Aggressive;
    ReferenceExecutor reference(m.graph, cfg.batch);
    const std::vector<Tensor> inputs = make_inputs(m.graph, reference.input_shapes(), 7);
    const size_t before = live_reordered_weights();
    {
      std::unique_ptr<Engine> engine = build_engine(m.graph, cfg);
      ThreadScope one(1);
      std::vector<Tensor> want;
      one.run([&] {
        engine->run(inputs);
        for (const Tensor& t : engine->outputs()) want.push_back(t.clone());
      });
      const size_t packed = live_reordered_weights() - before;
      EXPECT_GT(packed, 0u) << "no layer of " << model << " reorders its weights: nothing here is shared";
      std::vector<std::unique_ptr<Engine>> contexts;
      for (int i = 0; i < 2; ++i) contexts.push_back(engine->make_context());
      std::vector<std::vector<Tensor>> got(contexts.size());
      std::vector<std::thread> threads;
      for (size_t i = 0; i < contexts.size(); ++i)
        threads.emplace_back([&, i] {
          ThreadScope scope(1);
          scope.run([&] {
            for (int k = 0; k < 3; ++k) contexts[i]->run(inputs);
            for (const Tensor& t : contexts[i]->outputs()) got[i].push_back(t.clone());
          });
        });
      for (std::thread& t : threads) t.join();
      EXPECT_EQ(live_reordered_weights() - before, packed) << "the contexts reordered their own copies";
      for (size_t i = 0; i < contexts.size(); ++i) {
        ASSERT_EQ(got[i].size(), want.size());
        for (size_t o = 0; o < want.size(); ++o)
          EXPECT_EQ(std::memcmp(got[i][o].raw(), want[o].raw(), want[o].nbytes()), 0) << "context " << i << " output " << o;
      }
    }
    EXPECT_EQ(live_reordered_weights(), before) << "reordered weights outlived every layer reading them";
  }
}

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
