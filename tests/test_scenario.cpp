// Scenario files: parsing, defaults, model path resolution, matrix expansion, and the
// messages for every kind of mistake (each must name the file and the field).
#include "harness/cases/scenario.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "engine/ir/error.h"
#include "harness/cases/accuracy.h"
#include "harness/cases/case_fields.h"

namespace fs = std::filesystem;

namespace {

// One matrix axis's values as the cases take them.
template <class T>
std::vector<T> axis_values(const fb::Scenario& s, const char* path, T fb::CaseSpec::*member) {
  std::vector<T> out;
  for (const fb::CaseSpec& c : s.axis(path)) out.push_back(c.*member);
  return out;
}

class ScenarioTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("fusebench_scenario_" + std::to_string(getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "models");
    std::ofstream(dir_ / "models" / "tiny.onnx") << "not really onnx; only its existence matters here";
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
    return p.string();
  }

  // The message of the fb::Error that loading `text` raises, or "" when it loads.
  std::string error_of(const std::string& text, const std::string& name = "bad.json") {
    std::string path = write(name, text);
    try {
      (void)fb::load_scenario(path);
    } catch (const fb::Error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

TEST_F(ScenarioTest, ValidFileWithCommentsParsesAllFields) {
  std::string path = write("scenarios/bert.json", R"({
    // a line comment
    "name": "bert-fusion",            /* a block comment */
    "description": "fusion levels at two batch sizes",
    "model": "../models/tiny.onnx",   // relative to this file's folder
    "matrix": {
      "precision": ["fp32"],
      "batch": [1, 8],
      "fusion": ["none", "standard"],
      "threads": [1, 4]
    },
    "timing": { "warmup_ms": 50, "warmup_iterations": 5, "min_iterations": 10,
                "max_iterations": 500, "max_seconds": 2.5, "target_rel_ci": 0.02 },
    "accuracy": { "atol": 1e-5, "rtol": 0 },
    "gate": { "min_speedup": 1.2 },
    "seed": 99
  })");
  fb::Scenario s = fb::load_scenario(path);
  EXPECT_EQ(s.name, "bert-fusion");
  EXPECT_EQ(s.description, "fusion levels at two batch sizes");
  EXPECT_EQ(s.file, (dir_ / "scenarios" / "bert.json").lexically_normal().string());
  EXPECT_EQ(s.model, (dir_ / "models" / "tiny.onnx").lexically_normal().string());
  EXPECT_EQ(axis_values(s, "precision", &fb::CaseSpec::precision), (std::vector<fb::Precision>{fb::Precision::FP32}));
  EXPECT_EQ(axis_values(s, "batch", &fb::CaseSpec::batch), (std::vector<int64_t>{1, 8}));
  EXPECT_EQ(axis_values(s, "fusion", &fb::CaseSpec::fusion), (std::vector<fb::FusionLevel>{fb::FusionLevel::None, fb::FusionLevel::Standard}));
  EXPECT_EQ(axis_values(s, "threads", &fb::CaseSpec::threads), (std::vector<int>{1, 4}));
  EXPECT_DOUBLE_EQ(s.settings.timing.warmup_ms, 50);
  EXPECT_EQ(s.settings.timing.warmup_iterations, 5);
  EXPECT_EQ(s.settings.timing.min_iterations, 10);
  EXPECT_EQ(s.settings.timing.max_iterations, 500);
  EXPECT_DOUBLE_EQ(s.settings.timing.max_seconds, 2.5);
  EXPECT_DOUBLE_EQ(s.settings.timing.target_rel_ci, 0.02);
  EXPECT_DOUBLE_EQ(s.settings.accuracy.atol, 1e-5);
  EXPECT_DOUBLE_EQ(s.settings.accuracy.rtol, 0);
  ASSERT_TRUE(s.settings.gate.min_speedup.has_value());
  EXPECT_DOUBLE_EQ(*s.settings.gate.min_speedup, 1.2);
  EXPECT_EQ(s.settings.seed, 99u);
}

TEST_F(ScenarioTest, DefaultsAndZooModelKeptAsWritten) {
  std::string path = write("quick-start.json", R"({ "model": "zoo:bert?layers=4&hidden=256" })");
  fb::Scenario s = fb::load_scenario(path);
  EXPECT_EQ(s.name, "quick-start");  // the file's stem
  EXPECT_EQ(s.model, "zoo:bert?layers=4&hidden=256");
  EXPECT_EQ(axis_values(s, "precision", &fb::CaseSpec::precision), (std::vector<fb::Precision>{fb::Precision::FP32}));
  EXPECT_EQ(axis_values(s, "batch", &fb::CaseSpec::batch), (std::vector<int64_t>{1}));
  EXPECT_EQ(axis_values(s, "fusion", &fb::CaseSpec::fusion), (std::vector<fb::FusionLevel>{fb::FusionLevel::Standard}));
  EXPECT_EQ(axis_values(s, "threads", &fb::CaseSpec::threads), (std::vector<int>{1}));
  fb::TimingConfig defaults;
  EXPECT_DOUBLE_EQ(s.settings.timing.warmup_ms, defaults.warmup_ms);
  EXPECT_EQ(s.settings.timing.min_iterations, defaults.min_iterations);
  EXPECT_DOUBLE_EQ(s.settings.timing.target_rel_ci, defaults.target_rel_ci);
  EXPECT_DOUBLE_EQ(s.settings.accuracy.atol, fb::AccuracyConfig{}.atol);
  EXPECT_FALSE(s.settings.gate.min_speedup.has_value());
  EXPECT_EQ(s.settings.seed, 1234u);
}

TEST_F(ScenarioTest, ScalarThreadsIsOneValue) {
  fb::Scenario s = fb::load_scenario(write("t.json", R"({ "model": "zoo:mlp", "threads": 2 })"));
  EXPECT_EQ(axis_values(s, "threads", &fb::CaseSpec::threads), (std::vector<int>{2}));
}

TEST_F(ScenarioTest, ParseFromTextResolvesAgainstTheGivenPath) {
  std::string path = (dir_ / "scenarios" / "x.json").string();  // need not exist itself
  fb::Scenario s = fb::parse_scenario(R"({"model": "../models/tiny.onnx"})", path);
  EXPECT_EQ(s.model, (dir_ / "models" / "tiny.onnx").string());
  EXPECT_EQ(s.name, "x");
}

TEST_F(ScenarioTest, ModelPathResolution) {
  fs::create_directories(dir_ / "a" / "b");
  std::ofstream(dir_ / "a" / "m.onnx") << "x";

  // Relative to the scenario's folder, not to the working directory; normalized.
  fb::Scenario s1 = fb::load_scenario(write("a/b/s1.json", R"({"model": "./../m.onnx"})"));
  EXPECT_EQ(s1.model, (dir_ / "a" / "m.onnx").string());
  fb::Scenario s2 = fb::load_scenario(write("a/s2.json", R"({"model": "b/../m.onnx"})"));
  EXPECT_EQ(s2.model, (dir_ / "a" / "m.onnx").string());
  // An absolute path stays as it is.
  std::string abs = (dir_ / "models" / "tiny.onnx").string();
  fb::Scenario s3 = fb::load_scenario(write("a/b/s3.json", "{\"model\": \"" + abs + "\"}"));
  EXPECT_EQ(s3.model, abs);
  EXPECT_TRUE(fs::path(s3.file).is_absolute());
}

TEST_F(ScenarioTest, ExpandCasesIsTheCrossProductInOrder) {
  fb::Scenario s = fb::load_scenario(write("grid.json", R"({
    "name": "grid", "model": "zoo:mlp", "seed": 7,
    "matrix": { "batch": [1, 8], "fusion": ["none", "standard"], "threads": [1, 2] },
    "timing": { "min_iterations": 5 }, "accuracy": { "atol": 0.5 }
  })"));
  std::vector<fb::CaseSpec> cases = fb::expand_cases(s);
  ASSERT_EQ(cases.size(), 8u);
  // precision (outermost) × batch × fusion × threads (innermost)
  struct Expect { int64_t batch; const char* fusion; int threads; };
  const Expect expected[] = {{1, "none", 1}, {1, "none", 2}, {1, "standard", 1}, {1, "standard", 2},
                             {8, "none", 1}, {8, "none", 2}, {8, "standard", 1}, {8, "standard", 2}};
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const fb::CaseSpec& c = cases[i];
    EXPECT_EQ(c.precision, fb::Precision::FP32);
    EXPECT_EQ(c.batch, expected[i].batch);
    EXPECT_EQ(fb::fusion_level_name(c.fusion), std::string(expected[i].fusion));
    EXPECT_EQ(c.threads, expected[i].threads);
    EXPECT_EQ(c.scenario, "grid");
    EXPECT_EQ(c.scenario_file, s.file);
    EXPECT_EQ(c.model, "zoo:mlp");
    EXPECT_TRUE(c.model_hash.empty());
    EXPECT_EQ(c.seed, 7u);
    EXPECT_EQ(c.timing.min_iterations, 5);
    EXPECT_DOUBLE_EQ(c.accuracy.atol, 0.5);
  }
}

// The expected outputs come from the CPU reference: an fp32 case on a GPU sums in cuBLAS's
// and cuDNN's orders and gets the device reference's own agreement, unless the scenario
// names its fp32 tolerance, which then holds on every device.
TEST_F(ScenarioTest, Fp32OnADeviceGetsTheDeviceAgreementUnlessNamed) {
  const std::vector<fb::CaseSpec> plain = fb::expand_cases(fb::load_scenario(write("dev.json", R"({
    "model": "zoo:mlp", "matrix": {"device": ["cpu", "cuda"], "precision": ["fp32", "fp16"]}})")));
  ASSERT_EQ(plain.size(), 4u);
  EXPECT_EQ(plain[0].device, "cpu");
  EXPECT_EQ(plain[0].accuracy, fb::AccuracyConfig{});
  EXPECT_EQ(plain[2].device, "cuda");
  EXPECT_EQ(plain[2].precision, fb::Precision::FP32);
  EXPECT_EQ(plain[2].accuracy, fb::device_reference_agreement());
  EXPECT_DOUBLE_EQ(plain[2].accuracy.atol, 1e-3);
  EXPECT_EQ(plain[3].accuracy, plain[1].accuracy);  // fp16: cosine >= 0.999 on both
  EXPECT_EQ(plain[3].accuracy.min_cosine, 0.999);

  const std::vector<fb::CaseSpec> named = fb::expand_cases(fb::load_scenario(write("named.json", R"({
    "model": "zoo:mlp", "matrix": {"device": ["cpu", "cuda"]}, "accuracy": {"atol": 2e-5}})")));
  ASSERT_EQ(named.size(), 2u);
  for (const fb::CaseSpec& c : named) {
    EXPECT_DOUBLE_EQ(c.accuracy.atol, 2e-5) << c.device;
    EXPECT_DOUBLE_EQ(c.accuracy.rtol, 1e-3) << c.device;
    EXPECT_FALSE(c.accuracy.min_cosine.has_value()) << c.device;
  }
}

TEST_F(ScenarioTest, DefaultScenarioExpandsToOneCase) {
  std::vector<fb::CaseSpec> cases = fb::expand_cases(fb::load_scenario(write("one.json", R"({"model":"zoo:mlp"})")));
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].batch, 1);
  EXPECT_EQ(cases[0].fusion, fb::FusionLevel::Standard);
}

TEST_F(ScenarioTest, MissingFileNamesIt) {
  std::string path = (dir_ / "nowhere.json").string();
  try {
    (void)fb::load_scenario(path);
    FAIL() << "no error";
  } catch (const fb::Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("not found"), std::string::npos) << e.what();
  }
}

TEST_F(ScenarioTest, SyntaxErrorGivesFileLineAndColumn) {
  std::string msg = error_of("{\n  \"model\": \"zoo:mlp\",\n  \"seed\": ,\n}\n", "syntax.json");
  EXPECT_NE(msg.find("syntax.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("line 3"), std::string::npos) << msg;
  EXPECT_NE(msg.find("column"), std::string::npos) << msg;
  EXPECT_EQ(msg.find("[json.exception"), std::string::npos) << msg;
}

TEST_F(ScenarioTest, ModelFileThatDoesNotExist) {
  std::string msg = error_of(R"({"model": "models/missing.onnx"})");
  EXPECT_NE(msg.find("bad.json: field 'model'"), std::string::npos) << msg;
  EXPECT_NE(msg.find((dir_ / "models" / "missing.onnx").string()), std::string::npos) << msg;
}

// Each bad scenario, and what its message must say besides the file name.
struct BadCase {
  const char* what;
  const char* json;
  std::vector<std::string> expect;
};

// The CUDA-graph axis: the two forms of each case side by side, only the graphed one
// carrying the setting in key, label, stored config and build config; the top-level form
// sets it for every case; a value that is no boolean, or both forms at once, names the field.
TEST(ScenarioCudaGraphs, AxisPairsEachCaseAndOnlyGraphedCasesCarryIt) {
  const fb::Scenario s = fb::parse_scenario(
      R"({"model": "zoo:mlp", "matrix": {"batch": [1, 8], "cuda_graph": [false, true], "device": ["cuda"]}})", "/tmp/g.json");
  const std::vector<fb::CaseSpec> cases = fb::expand_cases(s);
  ASSERT_EQ(cases.size(), 4u);
  EXPECT_EQ(cases[0].batch, 1);
  EXPECT_FALSE(cases[0].cuda_graph);
  EXPECT_EQ(cases[1].batch, 1);
  EXPECT_TRUE(cases[1].cuda_graph);
  EXPECT_EQ(cases[2].batch, 8);
  const fb::CaseSpec plain =
      fb::expand_cases(fb::parse_scenario(R"({"model": "zoo:mlp", "matrix": {"device": ["cuda"]}})", "/tmp/g.json"))[0];
  EXPECT_EQ(cases[0].case_key(), plain.case_key());
  EXPECT_NE(cases[1].case_key(), cases[0].case_key());
  EXPECT_NE(cases[1].label().find(" cuda-graph"), std::string::npos) << cases[1].label();
  EXPECT_EQ(cases[0].label().find("graph"), std::string::npos) << cases[0].label();
  EXPECT_TRUE(fb::CaseSpec::from_json(cases[1].to_json()).cuda_graph);
  EXPECT_TRUE(fb::build_config_of(cases[1]).cuda_graph);
  EXPECT_FALSE(fb::build_config_of(cases[0]).cuda_graph);
  const std::vector<fb::CaseSpec> top =
      fb::expand_cases(fb::parse_scenario(R"({"model": "zoo:mlp", "cuda_graph": true, "matrix": {"batch": [1, 2]}})", "/tmp/g.json"));
  ASSERT_EQ(top.size(), 2u);
  EXPECT_TRUE(top[0].cuda_graph && top[1].cuda_graph);
  const std::pair<const char*, const char*> bad[] = {
      {R"({"model": "zoo:mlp", "matrix": {"cuda_graph": ["yes"]}})", "matrix.cuda_graph[0]"},
      {R"({"model": "zoo:mlp", "cuda_graph": 1})", "field 'cuda_graph'"},
      {R"({"model": "zoo:mlp", "cuda_graph": true, "matrix": {"cuda_graph": [true]}})", "given both here and as 'matrix.cuda_graph'"}};
  for (const auto& [text, want] : bad) {
    try {
      fb::parse_scenario(text, "/tmp/g.json");
      ADD_FAILURE() << text << " was accepted";
    } catch (const fb::Error& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

TEST_F(ScenarioTest, EveryMistakeNamesFileAndField) {
  const BadCase cases[] = {
      {"batch not a number", R"({"model":"zoo:mlp","matrix":{"batch":[1,"eight"]}})",
       {"field 'matrix.batch[1]': expected a positive integer, got \"eight\""}},
      {"misspelled matrix field", R"({"model":"zoo:mlp","matrix":{"fusoin":["none"]}})",
       {"unknown field 'matrix.fusoin' (known: precision, batch, fusion, device, threads, engine_shapes, cuda_graph, load, instances)", "did you mean 'fusion'"}},
      {"model missing", R"({"name":"x"})", {"field 'model' is required"}},
      {"model empty", R"({"model":""})", {"field 'model'", "must not be empty"}},
      {"model not a string", R"({"model":3})", {"field 'model'", "expected a string, got 3"}},
      {"zoo without a name", R"({"model":"zoo:"})", {"field 'model'", "zoo:NAME"}},
      {"unknown top-level field", R"({"model":"zoo:mlp","modle":"x"})",
       {"unknown field 'modle' (known: name, description, model, matrix, threads, cuda_graph, load, instances, dynamic_batch, winograd, load_settings, timing, accuracy, gate, seed, profile, fusion_limits, precision_constraints, calibration, shape_inputs, plugins, insert_plugins, plugin_cost)"}},
      {"top level not an object", R"([1, 2])", {"expected a JSON object at the top level"}},
      {"matrix not an object", R"({"model":"zoo:mlp","matrix":[1]})", {"field 'matrix': expected an object"}},
      {"unsupported precision", R"({"model":"zoo:mlp","matrix":{"precision":["int4"]}})",
       {"field 'matrix.precision[0]': precision 'int4' is not supported (supported: fp32, tf32, bf16, fp16, int8)"}},
      {"unsupported fusion", R"({"model":"zoo:mlp","matrix":{"fusion":["none","turbo"]}})",
       {"field 'matrix.fusion[1]'", "'turbo'", "allowed: none, mark-all, standard, aggressive"}},
      {"fusion not a string", R"({"model":"zoo:mlp","matrix":{"fusion":[1]}})",
       {"field 'matrix.fusion[0]': expected a string"}},
      {"batch zero", R"({"model":"zoo:mlp","matrix":{"batch":[0]}})",
       {"field 'matrix.batch[0]': expected a positive integer, got 0"}},
      {"batch too large", R"({"model":"zoo:mlp","matrix":{"batch":[65537]}})",
       {"field 'matrix.batch[0]'", "at most 65536"}},
      {"batch fractional", R"({"model":"zoo:mlp","matrix":{"batch":[8.5]}})",
       {"field 'matrix.batch[0]': expected a positive integer, got 8.5"}},
      {"batch not a list", R"({"model":"zoo:mlp","matrix":{"batch":8}})",
       {"field 'matrix.batch': expected a list, got 8"}},
      {"empty list", R"({"model":"zoo:mlp","matrix":{"batch":[]}})", {"field 'matrix.batch': must not be empty"}},
      {"duplicate list value", R"({"model":"zoo:mlp","matrix":{"batch":[1,8,1]}})",
       {"field 'matrix.batch[2]': duplicate value 1 (also at matrix.batch[0])"}},
      {"duplicate fusion", R"({"model":"zoo:mlp","matrix":{"fusion":["none","none"]}})",
       {"field 'matrix.fusion[1]': duplicate value \"none\""}},
      {"threads zero", R"({"model":"zoo:mlp","threads":0})", {"field 'threads': expected a positive integer, got 0"}},
      {"threads too many", R"({"model":"zoo:mlp","matrix":{"threads":[1,2048]}})",
       {"field 'matrix.threads[1]'", "at most 1024"}},
      {"threads twice", R"({"model":"zoo:mlp","threads":2,"matrix":{"threads":[1]}})",
       {"field 'threads'", "matrix.threads"}},
      {"warmup not positive", R"({"model":"zoo:mlp","timing":{"warmup_ms":0}})",
       {"field 'timing.warmup_ms': expected a positive number, got 0"}},
      {"max_seconds negative", R"({"model":"zoo:mlp","timing":{"max_seconds":-1}})",
       {"field 'timing.max_seconds': expected a positive number"}},
      {"min_iterations a string", R"({"model":"zoo:mlp","timing":{"min_iterations":"20"}})",
       {"field 'timing.min_iterations': expected a positive integer"}},
      {"min above max", R"({"model":"zoo:mlp","timing":{"min_iterations":50,"max_iterations":10}})",
       {"field 'timing.min_iterations'", "more than max_iterations (10)"}},
      {"target_rel_ci 1", R"({"model":"zoo:mlp","timing":{"target_rel_ci":1}})",
       {"field 'timing.target_rel_ci'", "between 0 and 1"}},
      {"target_rel_ci 0", R"({"model":"zoo:mlp","timing":{"target_rel_ci":0}})", {"field 'timing.target_rel_ci'"}},
      {"unknown timing field", R"({"model":"zoo:mlp","timing":{"warmup":5}})", {"unknown field 'timing.warmup'"}},
      {"atol negative", R"({"model":"zoo:mlp","accuracy":{"atol":-1e-3}})",
       {"field 'accuracy.atol': expected a number >= 0"}},
      {"rtol a string", R"({"model":"zoo:mlp","accuracy":{"rtol":"tight"}})", {"field 'accuracy.rtol'"}},
      {"gate speedup zero", R"({"model":"zoo:mlp","gate":{"min_speedup":0}})",
       {"field 'gate.min_speedup': expected a positive number"}},
      {"unknown gate field", R"({"model":"zoo:mlp","gate":{"max_slowdown":2}})",
       {"unknown field 'gate.max_slowdown' (known: min_speedup, max_regression, max_abs_err, min_valid_rate, max_claimed_ms)"}},
      {"seed negative", R"({"model":"zoo:mlp","seed":-1})", {"field 'seed': expected an integer >= 0, got -1"}},
      {"profile runs negative", R"({"model":"zoo:mlp","profile":{"iterations":-1}})",
       {"field 'profile.iterations': expected an integer >= 0, got -1"}},
      {"unknown profile field", R"({"model":"zoo:mlp","profile":{"runs":5}})", {"unknown field 'profile.runs' (known: iterations)"}},
      {"name empty", R"({"model":"zoo:mlp","name":""})", {"field 'name': must not be empty"}},
      {"key given twice", R"({"model":"zoo:mlp","matrix":{"batch":[1],"batch":[8]}})",
       {"field 'matrix.batch' is given twice"}},
  };
  for (const BadCase& c : cases) {
    SCOPED_TRACE(c.what);
    std::string msg = error_of(c.json);
    ASSERT_FALSE(msg.empty()) << "no error for " << c.json;
    EXPECT_NE(msg.find((dir_ / "bad.json").string() + ": "), std::string::npos) << msg;
    for (const std::string& part : c.expect) EXPECT_NE(msg.find(part), std::string::npos) << msg;
  }
}

TEST_F(ScenarioTest, TextErrorsNameThePathGiven) {
  try {
    (void)fb::parse_scenario(R"({"model":"zoo:mlp","matrix":{"batch":["x"]}})", "scenarios/x.json");
    FAIL() << "no error";
  } catch (const fb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("scenarios/x.json: field 'matrix.batch[0]'"), std::string::npos)
        << e.what();
  }
}

// The measurement settings and gate rules of issue 6: read, carried into every case (so the
// gate can judge a stored run without the scenario file), and refused when malformed.
TEST_F(ScenarioTest, TimingOptionsAndGateRulesReachTheCases) {
  fb::Scenario s = fb::load_scenario(write("m.json", R"({ "model": "zoo:mlp", "matrix": {"batch": [1, 2]},
    "timing": {"stop_rule": "speedup-ci", "pin_cpus": [0, 1], "inject_delay_us": 12.5},
    "gate": {"min_speedup": 1.5, "max_regression": 0.05, "max_abs_err": 1e-4} })"));
  EXPECT_EQ(s.settings.timing.stop_rule, "speedup-ci");
  EXPECT_EQ(s.settings.timing.pin_cpus, (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(s.settings.timing.inject_delay_us, 12.5);
  const std::vector<fb::CaseSpec> cases = fb::expand_cases(s);
  ASSERT_EQ(cases.size(), 2u);
  for (const fb::CaseSpec& c : cases) {
    EXPECT_EQ(c.gate.min_speedup, 1.5);
    EXPECT_EQ(c.gate.max_regression, 0.05);
    EXPECT_EQ(c.gate.max_abs_err, 1e-4);
    EXPECT_EQ(c.timing.stop_rule, "speedup-ci");
    // The stored config carries them back.
    fb::CaseSpec back = fb::CaseSpec::from_json(c.to_json());
    EXPECT_EQ(back.gate.max_regression, 0.05);
    EXPECT_EQ(back.timing.pin_cpus, c.timing.pin_cpus);
    EXPECT_EQ(back.timing.inject_delay_us, 12.5);
  }
  // The test hook and pinning leave the case key alone: a slowed-down night is the same case.
  fb::CaseSpec plain = cases[0];
  plain.timing = fb::TimingConfig{};
  EXPECT_EQ(plain.case_key(), cases[0].case_key());

  EXPECT_NE(error_of(R"({"model":"zoo:mlp","timing":{"stop_rule":"mean"}})")
                .find("field 'timing.stop_rule': expected \"median-ci\" or \"speedup-ci\""),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model":"zoo:mlp","timing":{"pin_cpus":[0,-1]}})").find("field 'timing.pin_cpus[1]'"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model":"zoo:mlp","timing":{"inject_delay_us":-5}})")
                .find("field 'timing.inject_delay_us': expected a number >= 0"),
            std::string::npos);
  EXPECT_NE(error_of(R"({"model":"zoo:mlp","gate":{"max_regression":"5%"}})").find("field 'gate.max_regression'"),
            std::string::npos);
}

// Every scenario the project ships loads and expands: a typo in one is found here, not by
// the first user who runs it.
TEST(ShippedScenarios, EveryOneLoadsAndExpands) {
  size_t files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::string(FUSEBENCH_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".json") continue;
    SCOPED_TRACE(entry.path().string());
    ++files;
    const fb::Scenario s = fb::load_scenario(entry.path().string());
    EXPECT_FALSE(fb::expand_cases(s).empty());
  }
  EXPECT_GE(files, 13u);
  const fb::Scenario dynamic = fb::load_scenario(std::string(FUSEBENCH_SOURCE_DIR) + "/scenarios/dynamic-shapes.json");
  const std::vector<fb::CaseSpec> cases = fb::expand_cases(dynamic);
  ASSERT_EQ(cases.size(), 6u);
  EXPECT_FALSE(cases[0].dynamic());
  EXPECT_TRUE(cases[1].dynamic());
  EXPECT_EQ(cases[1].dynamic_batch, (fb::BatchRange{1, 8, 16}));
}

TEST(ScenarioLists, OneSourceOfAllowedValues) {
  EXPECT_EQ(fb::supported_precisions(), (std::vector<std::string>{"fp32", "tf32", "bf16", "fp16", "int8"}));
  EXPECT_EQ(fb::supported_fusions(), (std::vector<std::string>{"none", "mark-all", "standard", "aggressive"}));
}

}  // namespace

TEST(ScenarioFusionLimits, ReachEveryCaseAndTheCaseKey) {
  fb::Scenario s = fb::parse_scenario(R"({
    "model": "zoo:bert",
    "fusion_limits": { "exclude_ops": ["Softmax"], "exclude_nodes": ["/encoder/layer.1/*"],
                       "partition_points": ["t0"] }
  })", "/tmp/limits.json");
  EXPECT_EQ(s.settings.fusion_limits.exclude_ops, std::vector<std::string>{"Softmax"});
  auto cases = fb::expand_cases(s);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].fusion_limits.exclude_nodes, std::vector<std::string>{"/encoder/layer.1/*"});
  EXPECT_EQ(cases[0].fusion_limits.partition_points, std::vector<std::string>{"t0"});
  fb::CaseSpec plain = cases[0];
  plain.fusion_limits = {};
  EXPECT_NE(cases[0].case_key(), plain.case_key());  // limits change the plan, so the key
  EXPECT_EQ(fb::CaseSpec::from_json(cases[0].to_json()).fusion_limits.exclude_ops, std::vector<std::string>{"Softmax"});
  try {
    fb::parse_scenario(R"({"model": "zoo:bert", "fusion_limits": {"exclude_op": ["Softmax"]}})", "/tmp/limits.json");
    FAIL() << "expected an error";
  } catch (const fb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("fusion_limits.exclude_op"), std::string::npos) << e.what();
  }
}

// One reader per setting: a value a scenario refuses, a stored config refuses with the same
// words (they once checked pin_cpus against different bounds). Every row of the case table
// a scenario gives, with a value no setting takes.
TEST(CaseFields, ScenarioAndStoredConfigRefuseABadValueAlike) {
  auto error_of = [](auto f) -> std::string {
    try {
      f();
    } catch (const fb::Error& e) {
      return e.what();
    }
    return "";
  };
  const nlohmann::ordered_json bad = "?";
  for (const fb::CaseField& f : fb::case_fields()) {
    const std::string path = f.path;
    // Precision constraints' layers differ in form (an object in a scenario, pairs stored).
    // A calibration cache may be any file name: "?" is a good one.
    if (f.in_scenario == fb::InScenario::kNotThere || path == "precision_constraints.layers" || path == "calibration.cache")
      continue;
    nlohmann::ordered_json scenario{{"model", "zoo:mlp"}};
    nlohmann::json stored = nlohmann::json::object();
    std::string scenario_field = path;
    const size_t dot = path.find('.');
    if (f.in_scenario == fb::InScenario::kInMatrix) {
      scenario["matrix"][path] = nlohmann::json::array({bad});  // {bad} is bad itself under clang
      scenario_field = "matrix." + path + "[0]";
      stored[path] = bad;
    } else if (dot == std::string::npos) {
      scenario[path] = bad;
      stored[path] = bad;
    } else {
      scenario[path.substr(0, dot)][path.substr(dot + 1)] = bad;
      stored[path.substr(0, dot)][path.substr(dot + 1)] = bad;
    }
    const std::string a = error_of([&] { fb::parse_scenario(scenario.dump(), "x.json"); });
    const std::string b = error_of([&] { fb::CaseSpec::from_json(stored); });
    const std::string a_prefix = "x.json: field '" + scenario_field + "': ";
    const std::string b_prefix = "case config: field '" + path + "': ";
    ASSERT_EQ(a.rfind(a_prefix, 0), 0u) << path << ": " << a;
    ASSERT_EQ(b.rfind(b_prefix, 0), 0u) << path << ": " << b;
    EXPECT_EQ(a.substr(a_prefix.size()), b.substr(b_prefix.size())) << path;
  }
  // The bound that once differed.
  EXPECT_EQ(error_of([] { fb::CaseSpec::from_json(nlohmann::json{{"timing", {{"pin_cpus", {5000}}}}}); }),
            "case config: field 'timing.pin_cpus[0]': must be at most 1023, got 5000");
  EXPECT_NE(error_of([] { fb::parse_scenario(R"({"model":"zoo:mlp","timing":{"pin_cpus":[5000]}})", "x.json"); })
                .find("field 'timing.pin_cpus[0]': must be at most 1023, got 5000"),
            std::string::npos);
}

// The device axis: one case per device, a CPU case keeps the key it had before devices
// existed (the setting is left out of its key and stored config), a device case carries
// it in key, label, stored config and build config; a malformed device names the field.
TEST(ScenarioDevices, AxisExpandsAndOnlyDeviceCasesCarryIt) {
  const fb::Scenario s = fb::parse_scenario(R"({"model": "zoo:mlp", "matrix": {"device": ["cpu", "cuda:1"]}})", "/tmp/d.json");
  const std::vector<fb::CaseSpec> cases = fb::expand_cases(s);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].device, "cpu");
  EXPECT_EQ(cases[1].device, "cuda:1");
  const std::vector<fb::CaseSpec> plain = fb::expand_cases(fb::parse_scenario(R"({"model": "zoo:mlp"})", "/tmp/d.json"));
  ASSERT_EQ(plain.size(), 1u);
  EXPECT_EQ(cases[0].case_key(), plain[0].case_key());
  EXPECT_EQ(cases[0].to_json().dump(), plain[0].to_json().dump());
  EXPECT_NE(cases[1].case_key(), cases[0].case_key());
  EXPECT_NE(cases[1].label().find(" cuda:1"), std::string::npos) << cases[1].label();
  EXPECT_EQ(cases[0].label().find("cuda"), std::string::npos) << cases[0].label();
  EXPECT_EQ(fb::CaseSpec::from_json(cases[1].to_json()).device, "cuda:1");
  EXPECT_EQ(fb::build_config_of(cases[1]).device, "cuda:1");
  for (const char* bad : {R"(["gpu"])", R"(["cuda:"])", R"([0])"}) {
    try {
      fb::parse_scenario(std::string(R"({"model": "zoo:mlp", "matrix": {"device": )") + bad + "}}", "/tmp/d.json");
      ADD_FAILURE() << bad << " was accepted";
    } catch (const fb::Error& e) {
      EXPECT_NE(std::string(e.what()).find("matrix.device"), std::string::npos) << e.what();
    }
  }
}
