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
#include <optional>

#include <nlohmann/json.hpp>

#include "engine/builder/builder.h"
#include "engine/reference/reference_executor.h"
#include "engine/runtime/thread_scope.h"
#include "harness/cases/model_source.h"
#include "harness/cases/tensor_file.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

constexpr double kRelTolerance = 1e-4;

fs::path models_dir() {
  if (const char* env = std::getenv("FUSEBENCH_TORCH_MODELS"); env && *env) return env;
  return fs::path(FUSEBENCH_SOURCE_DIR) / "build" / "torch-models";
}

// The cases are fixed here, not read from the manifest: ctest lists a test's cases when it
// is built, which may be before the export. PytorchAgreementManifest keeps the two in step.
const char* const kModels[] = {"resnet18", "mobilenet_v2", "bert", "vit_tiny"};
const int kOpsets[] = {13, 17};
const int64_t kBatches[] = {1, 8};

struct Case {
  std::string model;
  int opset = 0;
  int64_t batch = 0;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.model << " opset " << c.opset << " b" << c.batch; }

std::string case_name(const testing::TestParamInfo<Case>& p) {
  return p.param.model + "_opset" + std::to_string(p.param.opset) + "_b" + std::to_string(p.param.batch);
}

std::vector<Case> all_cases() {
  std::vector<Case> r;
  for (const char* m : kModels)
    for (int opset : kOpsets)
      for (int64_t batch : kBatches) r.push_back({m, opset, batch});
  return r;
}

// The manifest's entry for `model`, or null when the folder or the model is absent.
std::optional<nlohmann::json> manifest_entry(const std::string& model) {
  std::ifstream f(models_dir() / "manifest.json");
  if (!f) return std::nullopt;
  const nlohmann::json manifest = nlohmann::json::parse(f);
  for (const auto& e : manifest.at("models"))
    if (e.at("name").get<std::string>() == model) return e;
  return std::nullopt;
}

bool lists(const nlohmann::json& array, int64_t v) {
  return std::find(array.begin(), array.end(), v) != array.end();
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
  std::optional<nlohmann::json> entry = manifest_entry(c.model);
  if (!entry || !lists(entry->at("opsets"), c.opset) || !lists(entry->at("batches"), c.batch))
    GTEST_SKIP() << c.model << " opset " << c.opset << " batch " << c.batch << " is not exported in " << dir
                 << " (run: /usr/bin/python3 scripts/export_models.py, needs python3-torch"
                    " and python3-torchvision; or set FUSEBENCH_TORCH_MODELS)";
  const std::vector<std::string> input_names = entry->at("inputs"), output_names = entry->at("outputs");

  const std::string prefix = (dir / (c.model + "_b" + std::to_string(c.batch))).string();
  LoadedModel m = load_model((dir / (c.model + "_opset" + std::to_string(c.opset) + ".onnx")).string());
  std::vector<Tensor> inputs;
  for (const GraphInput& in : m.graph.inputs) {
    const std::string& name = in.name;
    ASSERT_NE(std::find(input_names.begin(), input_names.end(), name), input_names.end())
        << "graph input '" << name << "' not in the manifest";
    inputs.push_back(read_tensor_file(prefix + "_in_" + name + ".npy"));
  }
  ASSERT_EQ(m.graph.outputs, output_names);
  std::vector<Tensor> expected;
  std::vector<double> bound;  // allowed max abs error per output
  for (const std::string& name : output_names) {
    expected.push_back(read_tensor_file(prefix + "_out_" + name + ".npy"));
    bound.push_back(kRelTolerance * std::max(1.0, max_abs(expected.back())));
  }

  auto check = [&](const std::string& who, const std::vector<Tensor>& got) {
    ASSERT_EQ(got.size(), expected.size()) << who;
    for (size_t i = 0; i < got.size(); ++i) {
      double err = max_abs_error(got[i], expected[i]);
      std::printf("  %-22s %-10s max abs err %.3g (bound %.3g)\n", who.c_str(), output_names[i].c_str(), err,
                  bound[i]);
      EXPECT_LE(err, bound[i]) << who << ", output '" << output_names[i] << "' of " << c.model << " opset "
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

INSTANTIATE_TEST_SUITE_P(Exported, PytorchAgreement, testing::ValuesIn(all_cases()), case_name);

// Every model, opset and batch the export wrote is one of the cases above.
TEST(PytorchAgreementManifest, HoldsNoUntestedCase) {
  std::ifstream f(models_dir() / "manifest.json");
  if (!f) GTEST_SKIP() << "no " << (models_dir() / "manifest.json") << " (run scripts/export_models.py)";
  const std::vector<Case> cases = all_cases();
  const nlohmann::json manifest = nlohmann::json::parse(f);
  for (const auto& e : manifest.at("models")) {
    // A std::string, not the json: C++20's reversed == makes `string == json` ambiguous (GCC 13).
    const std::string name = e.at("name").get<std::string>();
    for (int opset : e.at("opsets"))
      for (int64_t batch : e.at("batches"))
        EXPECT_TRUE(std::any_of(cases.begin(), cases.end(),
                                [&](const Case& c) { return c.model == name && c.opset == opset && c.batch == batch; }))
            << name << " opset " << opset << " batch " << batch << " is exported but not tested: add it to kModels/kOpsets/kBatches";
  }
}

}  // namespace
}  // namespace fb
