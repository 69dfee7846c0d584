// A plugin library built outside the tree (tests/data/plugin_project, built by the
// plugin_project_build fixture against this build's CMake package), loaded by path: it
// runs in both executors, a library of another API version is refused naming both
// versions, a failing plugin fails its own case only, and the binary takes --plugin.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/builder/builder.h"
#include "engine/ops/plugin_rows.h"
#include "engine/passes/plugin_placement.h"
#include "engine/reference/reference_executor.h"
#include "harness/cases/inputs.h"
#include "harness/cases/model_source.h"
#include "harness/run/runner.h"
#include "shell_command.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

const std::string kLibrary = std::string(FUSEBENCH_PLUGIN_PROJECT_DIR) + "/libexample_plugins.so";
const std::string kLibrary999 = std::string(FUSEBENCH_PLUGIN_PROJECT_DIR) + "_v999/libexample_plugins.so";
const char* kMlp = "zoo:mlp?hidden=16&in=8&layers=2&out=4";

PluginPlacement example(const std::string& op, const std::string& after) {
  PluginPlacement p;
  p.op = "example." + op;
  p.name = op;
  p.after = after;
  return p;
}

TEST(PluginLibrary, LoadsByPathAndRunsInBothExecutors) {
  ASSERT_TRUE(fs::exists(kLibrary)) << kLibrary << " was not built (the plugin_project_build test sets it up)";
  LoadedModel m = load_model(kMlp);
  PluginPlacement p = example("ScaleShift", "output");
  p.attrs["scale"] = Attribute{2.0f};
  p.attrs["shift"] = Attribute{0.5f};
  Graph g = place_plugins(m.graph, {p}, nullptr);
  auto ops = registry_with_plugins({kLibrary});
  BuildConfig cfg;
  cfg.threads = 2;
  auto engine = build_engine(g, cfg, {ops});
  const LayerInfo& last = engine->layers().back();
  EXPECT_EQ(last.kind, "example.ScaleShift");
  EXPECT_EQ(last.kernel, "plugin example.ScaleShift (" + kLibrary + ")");
  ReferenceExecutor plain(m.graph, 1), with(g, 1, {}, ops);
  auto inputs = make_inputs(m.graph, plain.input_shapes(), 3);
  const Tensor y0 = plain.run(inputs)[0];
  const Tensor y_ref = with.run(inputs)[0];
  engine->run(inputs);
  const Tensor y_eng = engine->outputs()[0];
  for (int64_t i = 0; i < y0.numel(); ++i) {
    const float want = y0.data<float>()[i] * 2.0f + 0.5f;
    EXPECT_EQ(y_ref.data<float>()[i], want) << i;  // the reference runs the same plugin on the same values
    EXPECT_NEAR(y_eng.data<float>()[i], want, 1e-5) << i;
  }
}

TEST(PluginLibrary, OtherApiVersionIsRefusedNamingBoth) {
  ASSERT_TRUE(fs::exists(kLibrary999));
  try {
    registry_with_plugins({kLibrary999});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "plugin library '" + kLibrary999 +
                                         "' was built against fusebench plugin API version 999, but this fusebench has "
                                         "plugin API version 2; rebuild the library against this fusebench's "
                                         "include/fusebench/plugin.h");
  }
}

TEST(PluginLibrary, AFailingPluginFailsItsCaseOnly) {
  CaseRunner runner(FUSEBENCH_BINARY);  // its worker processes run the fusebench binary, not this test
  auto spec = [&](const std::string& op, const std::string& mode) {
    CaseSpec c;
    c.model = kMlp;
    c.timing.warmup_ms = 1;
    c.timing.min_iterations = 3;
    c.timing.max_seconds = 0.2;
    c.plugins.libraries = {kLibrary};
    PluginPlacement p = example(op, "output");
    if (!mode.empty()) p.attrs["mode"] = Attribute{mode};
    c.plugins.placements = {p};
    c.plugins.cost = false;
    return c;
  };
  const CaseResult thrown = runner.run(spec("Fail", "throw"));
  const CaseResult status = runner.run(spec("Fail", "status"));
  const CaseResult fine = runner.run(spec("ScaleShift", ""));
  EXPECT_EQ(thrown.status, fb::CaseStatus::kError);
  EXPECT_NE(thrown.error.find("node 'Fail' (Fail): plugin 'example.Fail' (" + kLibrary +
                              ") failed: threw: example failure by exception"),
            std::string::npos)
      << thrown.error;
  EXPECT_EQ(status.status, fb::CaseStatus::kError);
  EXPECT_NE(status.error.find("plugin 'example.Fail' (" + kLibrary + ") failed: example failure by status"), std::string::npos)
      << status.error;
  EXPECT_EQ(fine.status, fb::CaseStatus::kPassed) << fine.error;
}

class PluginCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fb_plugin_cli_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    std::ofstream(dir_ / "s.json") << R"({"model": "zoo:mlp?hidden=16&in=8&layers=2&out=4",
      "insert_plugins": [{"op": "example.ScaleShift", "after": "output", "attrs": {"scale": 2.0}}],
      "timing": {"warmup_ms": 1, "min_iterations": 3, "max_seconds": 0.2}})";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string run(const std::string& plugin) {
    return std::string(FUSEBENCH_BINARY) + " run " + (dir_ / "s.json").string() + " --db " + (dir_ / "r.db").string() +
           " --plugin " + plugin;
  }
  fs::path dir_;
};

TEST_F(PluginCli, RunLoadsTheLibraryByPath) {
  Outcome o = sh(run(kLibrary));
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("plugin cost: "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("1 passed, 0 failed, 0 errors"), std::string::npos) << o.output;
}

TEST_F(PluginCli, MissingAndWrongVersionLibrariesAreErrors) {
  Outcome missing = sh(run((dir_ / "libnothing.so").string()));
  EXPECT_EQ(missing.code, 2);
  EXPECT_NE(missing.output.find("plugin library '" + (dir_ / "libnothing.so").string() + "': no such file"), std::string::npos)
      << missing.output;
  Outcome old = sh(run(kLibrary999));
  EXPECT_EQ(old.code, 2);
  EXPECT_NE(old.output.find("plugin API version 999, but this fusebench has plugin API version 2"), std::string::npos)
      << old.output;
}

}  // namespace
}  // namespace fb
