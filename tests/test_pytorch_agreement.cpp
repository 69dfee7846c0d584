// Real PyTorch models against PyTorch itself: scripts/export_models.py exports torchvision
// resnet18 and mobilenet_v2, a BERT-style encoder and a ViT-tiny-style model at opsets 13
// and 17, with torch's outputs for seeded inputs at batch 1 and 8. For each model, opset
// and batch, the reference executor and the engine at every fusion level must match
// torch to 1e-4 of the output's scale (max |torch output|, at least 1): float sums are
// reordered differently by torch, oneDNN and our fusions, a wrong kernel is off by far more.
//
// Models are read from $FUSEBENCH_TORCH_MODELS or <source>/build/torch-models
// (scripts/test.sh exports them when /usr/bin/python3 can import torch).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "engine/builder/builder.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "harness/model_source.h"
#include "harness/tensor_file.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

constexpr double kRelTolerance = 1e-4;

fs::path models_dir() {
  if (const char* env = std::getenv("FUSEBENCH_TORCH_MODELS"); env && *env) return env;
  return fs::path(FUSEBENCH_SOURCE_DIR) / "build" / "torch-models";
}

struct Case {
  std::string model;  // "" when no export was found (the test skips)
  int opset = 0;
  int64_t batch = 0;
  std::vector<std::string> inputs, outputs;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " opset " << c.opset << " b" << c.batch; }

std::string case_name(const testing::TestParamInfo<Case>& p) {
  if (p.param.model.empty()) return "NotExported";
  return p.param.model + "_opset" + std::to_string(p.param.opset) + "_b" + std::to_string(p.param.batch);
}

// Every model x opset x batch the manifest lists; one placeholder case when there is none,
// so that the absence is reported as a skip rather than as nothing at all.
std::vector<Case> manifest_cases() {
  std::ifstream f(models_dir() / "manifest.json");
  if (!f) return {Case{}};
  nlohmann::json m = nlohmann::json::parse(f);
  std::vector<Case> cases;
  for (const auto& e : m.at("models"))
    for (int opset : e.at("opsets"))
      for (int64_t batch : e.at("batches"))
        cases.push_back({e.at("name"), opset, batch, e.at("inputs"), e.at("outputs")});
  return cases;
}

double max_abs(const Tensor& t) {
  double m = 0;
  for (float v : t.values<float>()) m = std::max(m, double(std::fabs(v)));
  return m;
}

// Max |got - want| over the element pairs; infinity on a shape mismatch or a NaN.
double max_abs_error(const Tensor& got, const Tensor& want) {
  if (got.shape() != want.shape() || got.dtype() != DType::Float32) return INFINITY;
  auto g = got.values<float>(), w = want.values<float>();
  double e = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    double d = std::fabs(double(g[i]) - double(w[i]));
    if (std::isnan(d)) return INFINITY;
    e = std::max(e, d);
  }
  return e;
}

class PytorchAgreement : public testing::TestWithParam<Case> {};

TEST_P(PytorchAgreement, ReferenceAndEveryFusionLevelMatchTorch) {
  const Case& c = GetParam();
  const fs::path dir = models_dir();
  if (c.model.empty())
    GTEST_SKIP() << "no exported PyTorch models in " << dir
                 << " (run: /usr/bin/python3 scripts/export_models.py, needs python3-torch"
                    " and python3-torchvision; or set FUSEBENCH_TORCH_MODELS)";

  const std::string prefix = (dir / (c.model + "_b" + std::to_string(c.batch))).string();
  LoadedModel m = load_model((dir / (c.model + "_opset" + std::to_string(c.opset) + ".onnx")).string());
  std::vector<Tensor> inputs;
  for (const GraphInput& in : m.graph.inputs) {
    const std::string& name = in.name;
    ASSERT_NE(std::find(c.inputs.begin(), c.inputs.end(), name), c.inputs.end())
        << "graph input '" << name << "' not in the manifest";
    inputs.push_back(read_tensor_file(prefix + "_in_" + name + ".npy"));
  }
  ASSERT_EQ(m.graph.outputs, c.outputs);
  std::vector<Tensor> expected;
  std::vector<double> bound;  // allowed max abs error per output
  for (const std::string& name : c.outputs) {
    expected.push_back(read_tensor_file(prefix + "_out_" + name + ".npy"));
    bound.push_back(kRelTolerance * std::max(1.0, max_abs(expected.back())));
  }

  auto check = [&](const std::string& who, const std::vector<Tensor>& got) {
    ASSERT_EQ(got.size(), expected.size()) << who;
    for (size_t i = 0; i < got.size(); ++i) {
      double err = max_abs_error(got[i], expected[i]);
      std::printf("  %-22s %-10s max abs err %.3g (bound %.3g)\n", who.c_str(), c.outputs[i].c_str(), err,
                  bound[i]);
      EXPECT_LE(err, bound[i]) << who << ", output '" << c.outputs[i] << "' of " << c.model << " opset "
                               << c.opset << " batch " << c.batch;
    }
  };

  ThreadScope threads(2);
  threads.run([&] {
    ReferenceExecutor ref(m.graph, c.batch);
    check("reference", ref.run(inputs));
    for (FusionLevel level :
         {FusionLevel::None, FusionLevel::MarkAll, FusionLevel::Standard, FusionLevel::Aggressive}) {
      BuildConfig cfg;
      cfg.fusion = level;
      cfg.batch = c.batch;
      cfg.threads = 2;
      auto engine = build_engine(m.graph, cfg);
      engine->run(inputs);
      check(std::string("engine ") + fusion_level_name(level), engine->outputs());
    }
  });
}

INSTANTIATE_TEST_SUITE_P(Exported, PytorchAgreement, testing::ValuesIn(manifest_cases()), case_name);

}  // namespace
}  // namespace fb
