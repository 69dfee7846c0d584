// Shape inputs given by value, as users meet them: a scenario's "shape_inputs" (read,
// checked, stored, in the case key) and `--shape-input` on the build commands, on a model
// whose Reshape takes its shape from a graph input.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "engine/zoo/onnx_builder.h"
#include "harness/cases/case_fields.h"
#include "harness/cases/scenario.h"
#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"

namespace fb {
namespace {

// x float[x_dims] ─ Reshape(shape) ─ Relu ─▶ y, `shape` an int64[2] graph input: the
// fixed model takes x [2,3] (y [3,2] for shape [3, 2]); the batched one x [batch,6], where
// shape [-1, 3] makes y [2·batch, 3].
void write_reshape_model(const std::string& path, const std::vector<int64_t>& x_dims, const std::vector<int64_t>& y_dims) {
  zoo::OnnxBuilder b("reshape", "reshape");
  const std::string x = b.input("x", x_dims);
  const std::string shape = b.input("shape", {2});
  b.output(b.node("/r", "Relu", {b.node("/r", "Reshape", {x, shape})}), "y", y_dims);
  onnx::ModelProto m = b.finish();
  for (auto& in : *m.mutable_graph()->mutable_input())
    if (in.name() == "shape") in.mutable_type()->mutable_tensor_type()->set_elem_type(onnx::TensorProto::INT64);
  std::ofstream(path, std::ios::binary) << m.SerializeAsString();
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

class ShapeInputCases : public testing::Test {
 protected:
  ScratchDir dir_{"fb_shape_input_cases"};
  std::string model_ = dir_.path("reshape.onnx");
  void SetUp() override { write_reshape_model(model_, {2, 3}, {3, 2}); }
  std::string scenario(const std::string& shape_inputs) const {
    const std::string path = dir_.path("s.json");
    std::ofstream(path) << R"({"name": "reshape", "model": "reshape.onnx", )" << shape_inputs
                        << R"("matrix": {"batch": [1]}, "timing": {"processes": 1, "max_iterations": 20, "warmup_iterations": 1, "warmup_ms": 1}})";
    return path;
  }
};

TEST_F(ShapeInputCases, AScenarioGivesTheValuesWhichJoinTheKeyAndTheStoredConfig) {
  const std::vector<CaseSpec> bound = expand_cases(load_scenario(scenario(R"("shape_inputs": {"shape": [3, 2]}, )")));
  ASSERT_EQ(bound.size(), 1u);
  EXPECT_EQ(bound[0].shape_inputs.at("shape"), nlohmann::json::array({3, 2}));
  EXPECT_EQ(CaseSpec::from_json(bound[0].to_json()), bound[0]);
  const Tensor t = build_config_of(bound[0]).constant_inputs.at("shape");
  EXPECT_EQ(t.dtype(), DType::Int64);
  EXPECT_EQ(t.shape(), (Shape{2}));
  EXPECT_EQ(t.data<int64_t>()[0], 3);
  const std::vector<CaseSpec> other = expand_cases(load_scenario(scenario(R"("shape_inputs": {"shape": [2, 3]}, )")));
  EXPECT_NE(other[0].case_key(), bound[0].case_key());

  // A fraction makes float32; anything but numbers is an error naming the input.
  EXPECT_EQ(shape_input_tensor(nlohmann::json::array({1.0, 2.5}), "f").dtype(), DType::Float32);
  EXPECT_NE(error_of([&] { load_scenario(scenario(R"("shape_inputs": {"shape": [3, "2"]}, )")); })
                .find("field 'shape_inputs.shape': expected a number or a list of 1 to 64 numbers, got [3,\"2\"]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { load_scenario(scenario(R"("shape_inputs": [3, 2], )")); })
                .find("field 'shape_inputs': expected an object of {input: value}"),
            std::string::npos);
}

TEST_F(ShapeInputCases, RunBindsThemAndBothExecutorsAgree) {
  const std::string db = dir_.path("r.db");
  const Outcome ran = sh(std::string(FUSEBENCH_BINARY) + " run " + scenario(R"("shape_inputs": {"shape": [3, 2]}, )") +
                         " --db " + db);
  ASSERT_EQ(ran.code, 0) << ran.output;
  const ResultStore store(db);
  const std::vector<StoredCase> cases = store.load_cases(*store.latest_run());
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].result.status, fb::CaseStatus::kPassed) << cases[0].result.error;
  EXPECT_NE(cases[0].result.build_log.find("bound shape input 'shape' = int64[2] [3, 2]"), std::string::npos)
      << cases[0].result.build_log;
  EXPECT_EQ(cases[0].result.spec.shape_inputs.at("shape"), nlohmann::json::array({3, 2}));
}

TEST_F(ShapeInputCases, ADynamicEngineBindsThemOnceForEveryShape) {
  const std::string model = dir_.path("batched.onnx");
  write_reshape_model(model, {zoo::kBatch, 6}, {zoo::kBatch, 3});
  const std::string bin = FUSEBENCH_BINARY;
  const Outcome executed = sh(bin + " exec " + model +
                              " --shape-input shape=-1,3 --min-shapes x:1x6 --opt-shapes x:2x6 --max-shapes x:4x6 --batch 3");
  ASSERT_EQ(executed.code, 0) << executed.output;
  EXPECT_NE(executed.output.find("output y  float32[6,3]"), std::string::npos) << executed.output;
  const Outcome unbound = sh(bin + " exec " + model + " --min-shapes x:1x6 --opt-shapes x:2x6 --max-shapes x:4x6");
  EXPECT_EQ(unbound.code, 2) << unbound.output;
  EXPECT_NE(unbound.output.find("a dynamic engine binds it when it is built; give it with --shape-input shape=V[,V...]"),
            std::string::npos)
      << unbound.output;

  // A scenario's dynamic twin runs on the same bound value.
  const std::string path = dir_.path("d.json");
  std::ofstream(path) << R"({"name": "batched", "model": "batched.onnx", "shape_inputs": {"shape": [-1, 3]},
    "matrix": {"batch": [3], "engine_shapes": ["static", "dynamic"]}, "dynamic_batch": {"min": 1, "opt": 2, "max": 4},
    "timing": {"processes": 1, "max_iterations": 20, "warmup_iterations": 1, "warmup_ms": 1}})";
  const std::string db = dir_.path("d.db");
  const Outcome ran = sh(bin + " run " + path + " --db " + db);
  ASSERT_EQ(ran.code, 0) << ran.output;
  const ResultStore store(db);
  const std::vector<StoredCase> cases = store.load_cases(*store.latest_run());
  ASSERT_EQ(cases.size(), 2u);
  for (const StoredCase& c : cases) EXPECT_EQ(c.result.status, fb::CaseStatus::kPassed) << c.result.spec.label() << ": " << c.result.error;
}

TEST_F(ShapeInputCases, BuildCommandsTakeThemAsFlags) {
  const std::string bin = FUSEBENCH_BINARY;
  const Outcome inspected = sh(bin + " inspect " + model_ + " --shape-input shape=3,2");
  ASSERT_EQ(inspected.code, 0) << inspected.output;
  EXPECT_NE(inspected.output.find("bound shape input 'shape' = int64[2] [3, 2]"), std::string::npos) << inspected.output;
  // exec and profile run on the bound value: exec shows it among the inputs.
  const Outcome executed = sh(bin + " exec " + model_ + " --shape-input shape=3,2");
  ASSERT_EQ(executed.code, 0) << executed.output;
  EXPECT_NE(executed.output.find("input  shape  int64[2]  min 2  max 3  mean 2.5  (bound at build time)"), std::string::npos)
      << executed.output;
  EXPECT_NE(executed.output.find("output y  float32[3,2]"), std::string::npos) << executed.output;
  EXPECT_EQ(sh(bin + " profile " + model_ + " --shape-input shape=3,2 --iterations 3").code, 0);
  const Outcome wrong_count = sh(bin + " exec " + model_ + " --shape-input shape=6");
  EXPECT_EQ(wrong_count.code, 2) << wrong_count.output;
  EXPECT_NE(wrong_count.output.find("graph input 'shape' is declared int64[2], the value given has 1 element(s)"),
            std::string::npos)
      << wrong_count.output;

  const Outcome unbound = sh(bin + " inspect " + model_);
  EXPECT_EQ(unbound.code, 2) << unbound.output;
  EXPECT_NE(unbound.output.find("--shape-input shape=V[,V...]"), std::string::npos) << unbound.output;
  const Outcome garbled = sh(bin + " inspect " + model_ + " --shape-input shape=3,x");
  EXPECT_EQ(garbled.code, 2) << garbled.output;
  EXPECT_NE(garbled.output.find("--shape-input shape: expected numbers separated by commas, got '3,x'"), std::string::npos)
      << garbled.output;
}

}  // namespace
}  // namespace fb
