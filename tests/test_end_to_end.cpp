// End to end through the fusebench binary: a tiny scenario into a temporary database,
// the report, and the gate's exit codes (0 pass, 1 fail, 2 error).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/backend/backend.h"
#include "engine/zoo/zoo.h"
#include "harness/store/result_store.h"
#include "shell_command.h"
#include "sql_exec.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

class EndToEnd : public testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fb_e2e_" + std::to_string(::getpid()) + "_" +
                                        testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    return (dir_ / name).string();
  }
  std::string fb(const std::string& args) { return std::string(FUSEBENCH_BINARY) + " " + args; }
  fs::path dir_;
};

const char* kTinyScenario = R"({
  // two cases of a small MLP, timed briefly; ctest runs tests side by side on few cores, and
  // what these tests check is not the machine, so nothing counts as disturbed (also in the
  // scenarios of the gate, resume, kill, MPI and nightly tests)
  "name": "tiny <b>&",
  "model": "zoo:mlp?in=32&hidden=64&out=8&layers=2",
  "matrix": { "batch": [1, 2], "fusion": ["standard"] },
  "threads": 1,
  "timing": { "warmup_ms": 5, "warmup_iterations": 2, "min_iterations": 5, "max_seconds": 0.2, "disturbance_cpus": 64 }
})";

// A case that fails its accuracy check says why on its progress line, not only "failed":
// a max error of 0 alone would hide an output of another shape.
TEST_F(EndToEnd, AFailedCaseSaysWhy) {
  const std::string scenario = write("strict.json", R"({
    "model": "zoo:mlp?in=32&hidden=64&out=8&layers=2", "matrix": {"precision": ["bf16"]},
    "accuracy": {"bf16": {"atol": 0, "rtol": 0}},
    "timing": {"warmup_iterations": 1, "min_iterations": 2, "max_iterations": 2}
  })");
  Outcome run = sh(fb("run " + scenario + " --db " + (dir_ / "r.db").string()));
  EXPECT_NE(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("0 passed, 1 failed, 0 errors"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\n    output 'output' element 0: engine "), std::string::npos) << run.output;
}

// A GPU case on a machine without a usable GPU is an error case naming the device and what
// was found (no driver, no device, a build without CUDA); the CPU case beside it runs and
// stays stored, and run exits non-zero.
TEST_F(EndToEnd, AGpuCaseWithoutAGpuIsAnErrorNamingTheDevice) {
  try {
    backend_named("cuda");
    GTEST_SKIP() << "a CUDA device is usable here";
  } catch (const Error&) {
  }
  const std::string scenario = write("gpu.json", R"({
    "model": "zoo:mlp?in=32&hidden=64&out=8&layers=2", "matrix": {"device": ["cpu", "cuda"]},
    "timing": {"warmup_iterations": 1, "min_iterations": 2, "max_iterations": 2, "processes": 1, "disturbance_cpus": 64}
  })");
  const std::string db = (dir_ / "gpu.db").string();
  Outcome run = sh(fb("run " + scenario + " --db " + db));
  EXPECT_NE(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("1 passed, 0 failed, 1 errors"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(" cuda  ERROR: "), std::string::npos) << run.output;
  EXPECT_TRUE(run.output.find("device cuda:0: ") != std::string::npos ||
              run.output.find("device 'cuda': this fusebench was built without") != std::string::npos)
      << run.output;
  EXPECT_EQ(test::query_one(db, "SELECT count(*) FROM cases WHERE status = 'passed'"), "1");
}

// A case whose threads outnumber the machine's cores is disturbed however quiet the machine
// is (no free core for every thread): it is stored flagged (not timed again: that cannot
// help), and run, the store, gate (INCONCLUSIVE, exit 3) and the report say so. Its speedup
// rule, met, does not make it "pass" (nor would a miss make it FAIL: with threads short of
// cores the speedup is the machine's). Accuracy and gate are named apart on its line. The
// workers' OpenMP threads stop spinning on such a machine, unless the user chose the waits.
TEST_F(EndToEnd, ADisturbedCaseIsRetimedThenFlaggedAndNeverCalledPassed) {
  const int threads = static_cast<int>(std::thread::hardware_concurrency()) + 1;
  const std::string scenario = write("crowded.json", R"({
    "name": "crowded", "model": "zoo:mlp?in=32&hidden=64&out=8&layers=2", "threads": )" + std::to_string(threads) + R"(,
    "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 5, "max_seconds": 0.2, "processes": 2,
               "process_samples": 5, "disturbance_cpus": 0, "disturbance_retries": 1},
    "gate": {"min_speedup": 0.01}
  })");
  const std::string db = (dir_ / "r.db").string();
  // OpenMP's waits as fusebench chooses them (a user's own would be left alone, below).
  const std::string fusebench_waits = "env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u FUSEBENCH_OPENMP_WAITS ";
  const Outcome run =
      sh(fusebench_waits + fb("run " + scenario + " --db " + db + " --report " + (dir_ / "r.html").string()));
  ASSERT_EQ(run.code, 0) << run.output;
  const std::string cores = std::to_string(threads - 1);
  // A machine too busy for the threads: the workers' OpenMP threads do not spin (a spinning
  // thread waits on a descheduled one), and the run stores the waits it used.
  EXPECT_NE(run.output.find("the workers' OpenMP threads will not spin between parallel regions (GOMP_SPINCOUNT=0)"),
            std::string::npos)
      << run.output;
  EXPECT_EQ(ResultStore(db).load_run(1).info.library_versions.value("openmp waits", ""),
            "OMP_WAIT_POLICY=PASSIVE GOMP_SPINCOUNT=0");
  EXPECT_NE(run.output.find("warning: cases ask for " + std::to_string(threads) + " threads and this machine has " + cores +
                            " cores: they will be flagged disturbed"),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find("accuracy ok  gate INCONCLUSIVE: min_speedup speedup "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find(": the machine disturbed the timing; disturbed (below)"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\n    DISTURBED: 2 of 2 processes disturbed; process 1: " + std::to_string(threads) +
                            " threads on " + cores + " cores (other processes took "),
            std::string::npos)
      << run.output;
  EXPECT_NE(run.output.find(" 1 disturbed by the machine (flagged on their lines)"), std::string::npos) << run.output;
  {
    const auto cases = ResultStore(db).load_cases(1);
    ASSERT_EQ(cases.size(), 1u);
    EXPECT_EQ(cases[0].result.retimed_processes, 0);
    EXPECT_NE(cases[0].result.disturbed.find("2 of 2 processes disturbed"), std::string::npos);
  }
  const Outcome gate = sh(fb("gate --db " + db));
  EXPECT_EQ(gate.code, 3) << gate.output;
  EXPECT_NE(gate.output.find("INCONCLUSIVE  crowded"), std::string::npos) << gate.output;
  EXPECT_NE(gate.output.find("disturbed: disturbed when timed: 2 of 2 processes disturbed"), std::string::npos)
      << gate.output;
  std::ifstream html(dir_ / "r.html");
  const std::string page((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
  EXPECT_NE(page.find("<span class=\"badge environment\">disturbed</span>"), std::string::npos);

  // A user's own waits are theirs, busy machine or not.
  const std::string db2 = (dir_ / "user.db").string();
  const Outcome own = sh("env -u FUSEBENCH_OPENMP_WAITS -u OMP_WAIT_POLICY GOMP_SPINCOUNT=5000 " + fb("run " + scenario + " --db " + db2));
  ASSERT_EQ(own.code, 0) << own.output;
  EXPECT_EQ(own.output.find("GOMP_SPINCOUNT=0"), std::string::npos) << own.output;
  EXPECT_EQ(ResultStore(db2).load_run(1).info.library_versions.value("openmp waits", ""), "GOMP_SPINCOUNT=5000");
}

TEST_F(EndToEnd, RunStoresCasesWritesReportAndGates) {
  const std::string scenario = write("tiny.json", kTinyScenario);
  const std::string db = (dir_ / "r.db").string();
  Outcome run = sh(fb("run " + scenario + " --db " + db));
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("2 passed, 0 failed, 0 errors"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("results: "), std::string::npos);
  EXPECT_NE(run.output.find("report:  "), std::string::npos);

  {
    ResultStore store(db);
    auto run_id = store.latest_run();
    ASSERT_TRUE(run_id.has_value());
    auto cases = store.load_cases(*run_id);
    ASSERT_EQ(cases.size(), 2u);
    for (const StoredCase& c : cases) {
      EXPECT_EQ(c.result.status, fb::CaseStatus::kPassed);
      EXPECT_GE(c.result.engine.samples_ms.size(), 5u);
      EXPECT_EQ(c.result.engine.samples_ms.size(), c.result.reference.samples_ms.size());
      EXPECT_GT(c.result.engine.stats.median, 0);
      EXPECT_GT(c.result.speedup, 0);
      EXPECT_LE(c.result.accuracy.max_abs_err, 1e-4);
      EXPECT_FALSE(c.result.layers.empty());
      EXPECT_NE(c.result.build_log.find("imported: "), std::string::npos);
    }
  }
  std::ifstream html(dir_ / "r.html");
  ASSERT_TRUE(html.good());
  std::stringstream ss;
  ss << html.rdbuf();
  EXPECT_NE(ss.str().find("tiny &lt;b&gt;&amp;"), std::string::npos);  // the scenario name, escaped
  EXPECT_EQ(ss.str().find("tiny <b>&"), std::string::npos);

  Outcome pass = sh(fb("gate --db " + db + " --min-speedup 0.0001"));
  EXPECT_EQ(pass.code, 0) << pass.output;
  Outcome fail = sh(fb("gate --db " + db + " --min-speedup 100000"));
  EXPECT_EQ(fail.code, 1) << fail.output;
  EXPECT_NE(fail.output.find("FAIL"), std::string::npos);
  EXPECT_NE(fail.output.find("b=2"), std::string::npos) << fail.output;  // names each failing case
  Outcome missing = sh(fb("gate --db " + (dir_ / "nope.db").string() + " --min-speedup 1"));
  EXPECT_EQ(missing.code, 2) << missing.output;

  // The same run as if it had been interrupted: its stored cases pass, but it cannot.
  ASSERT_EQ(test::exec_sql(db, "UPDATE runs SET finished_at = NULL"), "");
  Outcome unfinished = sh(fb("gate --db " + db + " --min-speedup 0.0001"));
  EXPECT_EQ(unfinished.code, 1) << unfinished.output;
  EXPECT_NE(unfinished.output.find("run 1 never finished"), std::string::npos) << unfinished.output;
}

TEST_F(EndToEnd, MalformedScenarioIsExitTwoNamingFileAndField) {
  const std::string scenario = write("bad.json", R"({"model": "zoo:mlp", "matrix": {"batch": [1, "eight"]}})");
  const std::string db = (dir_ / "r.db").string();
  Outcome run = sh(fb("run " + scenario + " --db " + db));
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_NE(run.output.find("bad.json"), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("matrix.batch[1]"), std::string::npos) << run.output;
}

TEST_F(EndToEnd, BadModelIsAnErrorCaseAndEarlierResultsStay) {
  // A model file that is not ONNX: the case is stored as an error, the run exits 2.
  write("broken.onnx", "not a model");
  const std::string good = write("good.json", kTinyScenario);
  const std::string bad = write("bad.json", R"({"name": "broken", "model": "broken.onnx", "timing": {"min_iterations": 5, "max_seconds": 0.1}})");
  const std::string db = (dir_ / "r.db").string();
  Outcome run = sh(fb("run " + good + " " + bad + " --db " + db));
  EXPECT_EQ(run.code, 2) << run.output;
  EXPECT_NE(run.output.find("broken.onnx"), std::string::npos) << run.output;
  ResultStore store(db);
  auto cases = store.load_cases(*store.latest_run());
  ASSERT_EQ(cases.size(), 3u);
  EXPECT_EQ(cases[0].result.status, fb::CaseStatus::kPassed);
  EXPECT_EQ(cases[2].result.status, fb::CaseStatus::kError);
}

TEST_F(EndToEnd, InspectShowsFewerLayersThanNodesWithSources) {
  Outcome o = sh(fb("inspect zoo:bert"));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("107 ONNX nodes → 41 engine layers"), std::string::npos) << o.output.substr(0, 300);
  EXPECT_NE(o.output.find("← /encoder/layer.0/output/LayerNorm/ReduceMean"), std::string::npos);
  Outcome j = sh(fb("inspect zoo:mlp --format json"));
  ASSERT_EQ(j.code, 0) << j.output;
  EXPECT_NE(j.output.find("\"sources\""), std::string::npos);
  Outcome bad = sh(fb("inspect zoo:nosuch"));
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.output.find("nosuch"), std::string::npos);
}

// profile builds the engine, its unfused twin (to apportion fused layers' time) and, with
// a plugin, a baseline: every one of them from the same int8 calibration.
TEST_F(EndToEnd, ProfileOfAnInt8BuildTimesItsInt8Layers) {
  Outcome o = sh(fb("profile 'zoo:bert?layers=1&hidden=64&heads=2&seq=16' --precision int8 --fusion aggressive "
                    "--iterations 2 --threads 1"));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("fusebench.Quantize"), std::string::npos) << o.output;
}

// A model whose inputs fix the batch is profiled (built, inspected, run) at that batch, and
// each header says so (profile's once said "batch 1" of a static batch-8 file).
TEST_F(EndToEnd, HeadersGiveTheBatchAStaticModelFixes) {
  onnx::ModelProto model = build_zoo_model("mlp?in=16&hidden=32&out=4&layers=1");
  for (auto* values : {model.mutable_graph()->mutable_input(), model.mutable_graph()->mutable_output()})
    for (auto& v : *values) v.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim(0)->set_dim_value(8);
  const std::string path = (dir_ / "static8.onnx").string();
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
  Outcome o = sh(fb("profile " + path + " --iterations 2"));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find(", batch 8 (fixed by the model's input 'input'; --batch 1 does not apply), "), std::string::npos)
      << o.output;
  for (const std::string& command : {"inspect " + path, "exec " + path, "build " + path + " -o " + (dir_ / "static8.plan").string()}) {
    const Outcome other = sh(fb(command));
    ASSERT_EQ(other.code, 0) << command << "\n" << other.output;
    EXPECT_NE(other.output.find(", batch 8 (fixed by the model's input 'input'; --batch 1 does not apply)"), std::string::npos)
        << command << "\n" << other.output;
  }
  Outcome symbolic = sh(fb("profile 'zoo:mlp?in=16&hidden=32&out=4&layers=1' --batch 4 --iterations 2"));
  ASSERT_EQ(symbolic.code, 0) << symbolic.output;
  EXPECT_NE(symbolic.output.find(", batch 4, "), std::string::npos) << symbolic.output;
}

TEST_F(EndToEnd, ZooExportWritesARealOnnxFile) {
  const std::string out = (dir_ / "bert.onnx").string();
  Outcome o = sh(fb("zoo export bert?layers=1 -o " + out));
  ASSERT_EQ(o.code, 0) << o.output;
  Outcome i = sh(fb("inspect " + out + " --fusion none"));
  EXPECT_EQ(i.code, 0) << i.output;
  EXPECT_NE(i.output.find("58 ONNX nodes → 58 engine layers"), std::string::npos) << i.output.substr(0, 300);
}

}  // namespace
}  // namespace fb
