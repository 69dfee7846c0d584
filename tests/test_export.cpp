// export: the documented columns (the minimum set, in a stable order), one row per
// case and executor, CSV quoting and empty fields for missing numbers, JSON nulls, and the
// command's errors.
#include "reports/export.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "harness/stats/statistics.h"

namespace fs = std::filesystem;

namespace {

class ExportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fusebench_test_export_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

fb::CaseResult make_case(const std::string& scenario, int64_t batch) {
  fb::CaseResult r;
  r.spec.scenario = scenario;
  r.spec.model = "zoo:mlp";
  r.spec.model_hash = "beef";
  r.spec.batch = batch;
  r.engine.executor = "engine";
  r.reference.executor = "reference";
  r.engine.samples_ms = {1.0, 1.5, 2.0, 2.5};
  r.reference.samples_ms = {3.0, 3.0, 3.0};
  r.engine.stats = fb::compute_stats(r.engine.samples_ms);
  r.reference.stats = fb::compute_stats(r.reference.samples_ms);
  r.engine.items_per_s = 1000.0 * static_cast<double>(batch) / r.engine.stats.median;
  r.engine.minor_faults = {2, 9, 4.5};
  r.speedup = 3.0 / 1.75;
  r.accuracy.max_abs_err = 2.5e-7;
  r.stop_reason = "converged";
  return r;
}

TEST(ExportColumns, HoldTheDocumentedSetInOrder) {
  const std::vector<std::string> required{"run", "case_key", "scenario", "model", "precision", "batch", "fusion",
                                          "executor", "samples", "median_ms", "p90_ms", "p99_ms", "mean_ms",
                                          "ci_low_ms", "ci_high_ms", "items_per_s", "max_abs_err", "status"};
  const auto& cols = fb::export_columns();
  size_t last = 0;
  for (const std::string& name : required) {
    auto it = std::find(cols.begin(), cols.end(), name);
    ASSERT_NE(it, cols.end()) << name;
    const size_t at = static_cast<size_t>(it - cols.begin());
    EXPECT_GE(at, last) << name << " is out of the documented order";
    last = at;
  }
  // Pinned: a dashboard may read by position; new columns go at the end, never between.
  EXPECT_EQ(cols.size(), 36u);
  EXPECT_EQ(cols.front(), "run");
  EXPECT_EQ(cols[32], "status");
  EXPECT_EQ(cols[33], "engine_shapes");  // appended when dynamic engines came
  EXPECT_EQ(cols[34], "device");         // and these two with the GPU
  EXPECT_EQ(cols.back(), "cuda_graph");
  EXPECT_THROW(fb::parse_export_format("xml"), fb::Error);
}

TEST_F(ExportTest, CsvHasOneRowPerCaseAndExecutorWithQuoting) {
  const std::string db = (dir_ / "r.db").string();
  fb::ResultStore store(db);
  const int64_t run = store.begin_run(fb::RunInfo{});
  store.write_case(run, make_case("plain", 1));
  fb::CaseResult odd = make_case("with, comma \"and quotes\"", 8);
  odd.accuracy.max_abs_err = std::numeric_limits<double>::quiet_NaN();
  store.write_case(run, odd);

  std::ostringstream out;
  fb::export_runs(store, {run}, fb::ExportFormat::kCsv, out);
  std::vector<std::string> lines;
  std::istringstream in(out.str());
  for (std::string line; std::getline(in, line);) {
    ASSERT_FALSE(line.empty());
    ASSERT_EQ(line.back(), '\r');  // RFC 4180 line ends
    lines.push_back(line.substr(0, line.size() - 1));
  }
  ASSERT_EQ(lines.size(), 5u);  // header + 2 cases × 2 executors
  EXPECT_EQ(lines[0].substr(0, 28), "run,started_at,case_key,scen");
  const std::string key = make_case("plain", 1).spec.case_key();
  // run 1, no start time (empty RunInfo), the key, then the configuration and the engine's numbers.
  EXPECT_EQ(lines[1].substr(0, 2 + 1 + key.size() + 1), "1,," + key + ",");
  EXPECT_NE(lines[1].find(",plain,zoo:mlp,fp32,1,standard,1,engine,4,1.75,"), std::string::npos) << lines[1];
  EXPECT_NE(lines[2].find(",reference,3,3,"), std::string::npos) << lines[2];
  EXPECT_NE(lines[1].find(",2.5e-07,0,converged,passed"), std::string::npos) << lines[1];
  EXPECT_NE(lines[3].find(",\"with, comma \"\"and quotes\"\"\","), std::string::npos) << lines[3];
  EXPECT_NE(lines[3].find(",,0,converged,passed"), std::string::npos) << lines[3];  // NaN error: empty field
}

TEST_F(ExportTest, JsonRowsAreObjectsWithNullForMissingNumbers) {
  const std::string db = (dir_ / "r.db").string();
  fb::ResultStore store(db);
  const int64_t run1 = store.begin_run(fb::RunInfo{});
  store.write_case(run1, make_case("a", 1));
  const int64_t run2 = store.begin_run(fb::RunInfo{});
  fb::CaseResult c = make_case("b", 2);
  c.accuracy.max_abs_err = std::numeric_limits<double>::quiet_NaN();
  store.write_case(run2, c);

  std::ostringstream out;
  fb::export_runs(store, {run1, run2}, fb::ExportFormat::kJson, out);
  const nlohmann::json rows = nlohmann::json::parse(out.str());
  ASSERT_TRUE(rows.is_array());
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0]["run"], run1);
  EXPECT_EQ(rows[0]["executor"], "engine");
  EXPECT_EQ(rows[0]["samples"], 4);
  EXPECT_DOUBLE_EQ(rows[0]["median_ms"].get<double>(), 1.75);
  EXPECT_DOUBLE_EQ(rows[0]["minor_faults_per_iter"].get<double>(), 4.5);
  EXPECT_EQ(rows[1]["executor"], "reference");
  EXPECT_EQ(rows[2]["run"], run2);
  EXPECT_TRUE(rows[2]["max_abs_err"].is_null());
  EXPECT_EQ(rows[2]["noisy"], false);
  EXPECT_EQ(rows[0].size(), fb::export_columns().size());

  std::ostringstream empty;
  fb::export_runs(store, {}, fb::ExportFormat::kJson, empty);
  EXPECT_EQ(nlohmann::json::parse(empty.str()), nlohmann::json::array());
}

TEST_F(ExportTest, CommandWritesAFileAndRefusesBadInput) {
  const std::string db = (dir_ / "r.db").string();
  {
    fb::ResultStore store(db);
    store.write_case(store.begin_run(fb::RunInfo{}), make_case("a", 1));
  }
  const std::string bin = FUSEBENCH_BINARY;
  const std::string out = (dir_ / "out.csv").string();
  EXPECT_EQ(std::system((bin + " export --db " + db + " --format csv -o " + out).c_str()), 0);
  EXPECT_TRUE(fs::exists(out));
  EXPECT_GT(fs::file_size(out), 100u);
  auto exit_code = [](const std::string& cmd) {
    const int status = std::system((cmd + " > /dev/null 2>&1").c_str());
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  };
  EXPECT_EQ(exit_code(bin + " export --db " + db + " --format xml"), 2);
  EXPECT_EQ(exit_code(bin + " export --db " + db + " --run 42"), 2);
  EXPECT_EQ(exit_code(bin + " export --db " + (dir_ / "none.db").string()), 2);
}

}  // namespace
