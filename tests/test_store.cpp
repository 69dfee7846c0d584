// The SQLite result store: round trips, migrations and refusals, one transaction per case,
// concurrent readers, and the case key and hashing it relies on.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <string>

#include "engine/ir/error.h"
#include "engine/plan/build_config_json.h"
#include "engine/util/sha256.h"
#include "harness/cases/case.h"
#include "harness/cases/case_fields.h"
#include "harness/measure/environment.h"
#include "harness/store/result_store.h"

namespace fs = std::filesystem;
using fb::CaseResult;
using fb::CaseSpec;
using fb::ResultStore;
using fb::RunInfo;

namespace {

// A fresh folder per test, removed afterwards.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("fusebench_test_store_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  fs::path dir_;
};

// What a call threw, as text ("" when it did not throw fb::Error).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const fb::Error& e) {
    return e.what();
  }
  return "";
}

// Direct SQLite access, for what the store's API deliberately cannot do.
struct RawDb {
  explicit RawDb(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    sqlite3_busy_timeout(db, 2000);
  }
  ~RawDb() { sqlite3_close(db); }
  void exec(const std::string& sql) {
    char* err = nullptr;
    int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    EXPECT_EQ(rc, SQLITE_OK) << sql << ": " << (err ? err : "");
    sqlite3_free(err);
  }
  int64_t count(const std::string& table) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db, ("SELECT count(*) FROM " + table).c_str(), -1, &s, nullptr),
              SQLITE_OK);
    int64_t n = -1;
    if (sqlite3_step(s) == SQLITE_ROW) n = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return n;
  }
  sqlite3* db = nullptr;
};

RunInfo make_run_info() {
  RunInfo i;
  i.started_at = "2024-05-01T11:59:00Z";
  i.git_commit = "0123456789ab";
  i.git_dirty = true;
  i.host = "bench-01";
  i.cpu_model = "Intel(R) Xeon(R) Platinum 8480+";
  i.cpu_flags = "avx2 avx512f avx512bw amx_tile";
  i.cores = 16;
  i.memory_bytes = int64_t(128) << 30;
  i.kernel = "Linux 6.1.0-18-amd64";
  i.compiler = "g++ 12.2.0";
  i.library_versions = {{"onednn", "2.6.3"}, {"onnx", "1.12.0"}, {"sqlite", "3.40.1"}};
  i.fusebench_version = "0.1.0";
  i.command = "fusebench run scenarios/bert.json --db results.db";
  i.compiler_flags = "Release: -O2 -march=native -DNDEBUG";
  i.scenarios = nlohmann::json::array({{{"name", "bert"}, {"file", "/work/scenarios/bert.json"}}});
  i.shard = "2/5";
  return i;
}

fb::Measurement make_measurement(const std::string& executor, double base, int n) {
  fb::Measurement m;
  m.executor = executor;
  for (int i = 0; i < n; ++i) m.samples_ms.push_back(base + 0.001 * i + (i % 3) * 0.25);
  m.stats.n = static_cast<size_t>(n);
  m.stats.median = base + 0.25;
  m.stats.p90 = base + 0.5;
  m.stats.p99 = base + 0.51;
  m.stats.mean = base + 0.26;
  m.stats.stddev = 0.2;
  m.stats.min = base;
  m.stats.max = base + 0.52;
  m.stats.ci_low = base + 0.2;
  m.stats.ci_high = base + 0.3;
  m.items_per_s = 8 / ((base + 0.25) / 1000);
  m.first_iteration_ms = base * 10;
  m.stats.p95 = base + 0.505;
  m.stats.cv = 0.2 / (base + 0.26);
  m.stats.boot_ci_low = base + 0.21;
  m.stats.boot_ci_high = base + 0.29;
  m.stats.outliers_low = 1;
  m.stats.outliers_high = 3;
  m.minor_faults = {12, 40, 17.5};
  m.major_faults = {0, 2, 0.25};
  return m;
}

CaseResult make_case(const std::string& scenario, int64_t batch, const std::string& fusion) {
  CaseResult r;
  CaseSpec& s = r.spec;
  s.scenario = scenario;
  s.scenario_file = "/work/scenarios/" + scenario + ".json";
  s.model = "zoo:bert?layers=4&hidden=256";
  s.model_hash = fb::sha256_hex("model bytes");
  s.precision = fb::Precision::FP32;
  s.batch = batch;
  s.fusion = fb::parse_fusion_level(fusion);
  s.threads = 2;
  s.timing.warmup_ms = 150;
  s.timing.warmup_iterations = 4;
  s.timing.min_iterations = 30;
  s.timing.max_iterations = 5000;
  s.timing.max_seconds = 7.5;
  s.timing.target_rel_ci = 0.02;
  s.accuracy.atol = 2e-4;
  s.accuracy.rtol = 3e-3;
  s.seed = 18446744073709551615ull;  // the largest seed must survive JSON and SQLite
  r.status = fb::CaseStatus::kPassed;
  r.engine = make_measurement("engine", 1.5 * batch, 37);
  r.reference = make_measurement("reference", 4.0 * batch, 25);
  r.accuracy.max_abs_err = 3.5e-6;
  r.accuracy.max_rel_err = 1.25e-5;
  r.accuracy.cosine = 0.99999988;
  r.accuracy.passed = true;
  r.speedup = r.reference.stats.median / r.engine.stats.median;
  r.stop_reason = "converged";
  r.noisy = true;
  r.speedup_ci_low = r.speedup * 0.97;
  r.speedup_ci_high = r.speedup * 1.04;
  r.timer_overhead_ns = 21.5;
  r.interference = {0.75, 1.25, 312.5, 4000.25, 2995.5, std::numeric_limits<double>::quiet_NaN()};
  r.pinned_cpus = "2,3";
  r.timed_on = {"node-07", "AMD EPYC 9654", "avx2 avx512f", 192};
  r.isolation = "cores-per-worker=2";
  r.engine_memory_bytes = int64_t(3) << 33;
  r.reference_memory_bytes = int64_t(5) << 31;
  r.spec.gate.min_speedup = 1.2;
  r.spec.gate.max_abs_err = 1e-4;
  r.build_ms = 123.456;
  r.onnx_nodes = 311;
  r.build_log = "pass fuse_matmul_bias: 12 fusions\n\"quoted\" <tags> & 'apostrophes'\nünïcödé ✓\n";
  for (int i = 0; i < 4; ++i) {
    fb::LayerRecord l;
    l.index = i;
    l.name = "layer_" + std::to_string(i);
    l.kind = i % 2 ? "fusebench.FusedMatMul" : "Softmax";
    l.sources = {"/encoder/layer." + std::to_string(i) + "/MatMul", "/encoder/layer." + std::to_string(i) + "/Add"};
    l.kernel = i % 2 ? "onednn.matmul+bias" : "softmax.avx512";
    l.precision = "fp32";
    l.precision_reason = i % 2 ? "default" : "constraint 'Softmax'";
    l.input_shapes = {{batch, 16, 64}, {64, 64}};
    l.output_shapes = {{batch, 16, 64}};
    l.flops = 2.0 * 16 * 64 * 64 * double(batch) + i;
    l.bytes = 4.0 * (16 * 64 * 2 + 64 * 64) * double(batch);
    r.layers.push_back(l);
  }
  // The build's fusion decisions, and a profile of its layers (two runs each).
  r.fusion_decisions = {{"matmul-bias-activation-fusion", "/encoder/layer.1/MatMul", {"/encoder/layer.1/MatMul", "/encoder/layer.1/Add"},
                         "layer_1", ""},
                        {"attention-fusion", "/encoder/layer.0/Softmax", {"/encoder/layer.0/MatMul"}, "", "node 'x' is excluded"}};
  r.spec.profile_iterations = 2;
  fb::Profile& p = r.profile.emplace();
  p.iterations = 2;
  for (const fb::LayerRecord& l : r.layers) {
    const double ms = 0.25 * (l.index + 1);
    p.layers.push_back({l.index, l.name, l.kind, l.kernel, ms, l.flops, l.bytes, l.sources, "", {ms, ms + 0.125}});
    p.total_ms += ms;
    for (const std::string& n : l.sources) p.nodes.push_back({n, fb::module_of(n), l.index, ms / 2, true});
  }
  p.modules = fb::roll_up_modules(p.nodes, p.total_ms);
  r.profile_wall_ms = 87.5;
  return r;
}

void expect_same(const fb::Measurement& a, const fb::Measurement& b) {
  EXPECT_EQ(a.executor, b.executor);
  EXPECT_EQ(a.samples_ms, b.samples_ms);
  EXPECT_EQ(a.stats.n, b.stats.n);
  EXPECT_EQ(a.stats.median, b.stats.median);
  EXPECT_EQ(a.stats.p90, b.stats.p90);
  EXPECT_EQ(a.stats.p99, b.stats.p99);
  EXPECT_EQ(a.stats.mean, b.stats.mean);
  EXPECT_EQ(a.stats.stddev, b.stats.stddev);
  EXPECT_EQ(a.stats.min, b.stats.min);
  EXPECT_EQ(a.stats.max, b.stats.max);
  EXPECT_EQ(a.stats.ci_low, b.stats.ci_low);
  EXPECT_EQ(a.stats.ci_high, b.stats.ci_high);
  EXPECT_EQ(a.items_per_s, b.items_per_s);
  EXPECT_EQ(a.first_iteration_ms, b.first_iteration_ms);
  EXPECT_EQ(a.stats.p95, b.stats.p95);
  EXPECT_EQ(a.stats.cv, b.stats.cv);
  EXPECT_EQ(a.stats.boot_ci_low, b.stats.boot_ci_low);
  EXPECT_EQ(a.stats.boot_ci_high, b.stats.boot_ci_high);
  EXPECT_EQ(a.stats.outliers_low, b.stats.outliers_low);
  EXPECT_EQ(a.stats.outliers_high, b.stats.outliers_high);
  EXPECT_EQ(a.minor_faults.min, b.minor_faults.min);
  EXPECT_EQ(a.minor_faults.max, b.minor_faults.max);
  EXPECT_EQ(a.minor_faults.mean, b.minor_faults.mean);
  EXPECT_EQ(a.major_faults.min, b.major_faults.min);
  EXPECT_EQ(a.major_faults.max, b.major_faults.max);
  EXPECT_EQ(a.major_faults.mean, b.major_faults.mean);
}

// NaN-aware equality for figures that may be unreadable.
void expect_same_or_nan(double a, double b) {
  if (std::isnan(a)) EXPECT_TRUE(std::isnan(b));
  else EXPECT_EQ(a, b);
}

void expect_same(const CaseResult& a, const CaseResult& b) {
  EXPECT_EQ(a.spec.to_json(), b.spec.to_json());  // every CaseSpec field
  EXPECT_EQ(a.spec.case_key(), b.spec.case_key());
  EXPECT_EQ(a.status, b.status);
  EXPECT_EQ(a.error, b.error);
  expect_same(a.engine, b.engine);
  expect_same(a.reference, b.reference);
  EXPECT_EQ(a.accuracy.max_abs_err, b.accuracy.max_abs_err);
  EXPECT_EQ(a.accuracy.max_rel_err, b.accuracy.max_rel_err);
  EXPECT_EQ(a.accuracy.cosine, b.accuracy.cosine);
  EXPECT_EQ(a.accuracy.passed, b.accuracy.passed);
  EXPECT_EQ(a.accuracy.detail, b.accuracy.detail);
  EXPECT_EQ(a.speedup, b.speedup);
  EXPECT_EQ(a.speedup_ci_low, b.speedup_ci_low);
  EXPECT_EQ(a.speedup_ci_high, b.speedup_ci_high);
  EXPECT_EQ(a.stop_reason, b.stop_reason);
  EXPECT_EQ(a.noisy, b.noisy);
  EXPECT_EQ(a.timer_overhead_ns, b.timer_overhead_ns);
  expect_same_or_nan(a.interference.load_before, b.interference.load_before);
  expect_same_or_nan(a.interference.load_after, b.interference.load_after);
  expect_same_or_nan(a.interference.other_cpu_ms, b.interference.other_cpu_ms);
  expect_same_or_nan(a.interference.timed_wall_ms, b.interference.timed_wall_ms);
  expect_same_or_nan(a.interference.cpu_mhz_before, b.interference.cpu_mhz_before);
  expect_same_or_nan(a.interference.cpu_mhz_after, b.interference.cpu_mhz_after);
  EXPECT_EQ(a.pinned_cpus, b.pinned_cpus);
  EXPECT_EQ(a.engine_memory_bytes, b.engine_memory_bytes);
  EXPECT_EQ(a.reference_memory_bytes, b.reference_memory_bytes);
  EXPECT_EQ(a.build_ms, b.build_ms);
  EXPECT_EQ(a.onnx_nodes, b.onnx_nodes);
  EXPECT_EQ(a.build_log, b.build_log);
  ASSERT_EQ(a.layers.size(), b.layers.size());
  for (size_t i = 0; i < a.layers.size(); ++i) {
    EXPECT_EQ(a.layers[i].index, b.layers[i].index);
    EXPECT_EQ(a.layers[i].name, b.layers[i].name);
    EXPECT_EQ(a.layers[i].kind, b.layers[i].kind);
    EXPECT_EQ(a.layers[i].sources, b.layers[i].sources);
    EXPECT_EQ(a.layers[i].kernel, b.layers[i].kernel);
    EXPECT_EQ(a.layers[i].precision, b.layers[i].precision);
    EXPECT_EQ(a.layers[i].precision_reason, b.layers[i].precision_reason);
    EXPECT_EQ(a.layers[i].input_shapes, b.layers[i].input_shapes);
    EXPECT_EQ(a.layers[i].output_shapes, b.layers[i].output_shapes);
    EXPECT_EQ(a.layers[i].flops, b.layers[i].flops);
    EXPECT_EQ(a.layers[i].bytes, b.layers[i].bytes);
  }
  EXPECT_EQ(a.timed_on.host, b.timed_on.host);
  EXPECT_EQ(a.timed_on.cpu_model, b.timed_on.cpu_model);
  EXPECT_EQ(a.timed_on.cpu_flags, b.timed_on.cpu_flags);
  EXPECT_EQ(a.timed_on.cores, b.timed_on.cores);
  EXPECT_EQ(a.isolation, b.isolation);
  EXPECT_EQ(a.worker_lost, b.worker_lost);
  EXPECT_EQ(a.fusion_decisions, b.fusion_decisions);
  EXPECT_EQ(a.profile, b.profile);
  EXPECT_EQ(a.profile_wall_ms, b.profile_wall_ms);
}

void expect_same(const RunInfo& a, const RunInfo& b) {
  EXPECT_EQ(a.started_at, b.started_at);
  EXPECT_EQ(a.git_commit, b.git_commit);
  EXPECT_EQ(a.git_dirty, b.git_dirty);
  EXPECT_EQ(a.host, b.host);
  EXPECT_EQ(a.cpu_model, b.cpu_model);
  EXPECT_EQ(a.cpu_flags, b.cpu_flags);
  EXPECT_EQ(a.cores, b.cores);
  EXPECT_EQ(a.memory_bytes, b.memory_bytes);
  EXPECT_EQ(a.kernel, b.kernel);
  EXPECT_EQ(a.compiler, b.compiler);
  EXPECT_EQ(a.library_versions, b.library_versions);
  EXPECT_EQ(a.fusebench_version, b.fusebench_version);
  EXPECT_EQ(a.command, b.command);
  EXPECT_EQ(a.compiler_flags, b.compiler_flags);
  EXPECT_EQ(a.scenarios, b.scenarios);
  EXPECT_EQ(a.shard, b.shard);
}

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

}  // namespace

// ---- round trip ----

TEST_F(StoreTest, RoundTripsRunAndCasesWithEverything) {
  const std::string db = file("results.db");
  const RunInfo info = make_run_info();
  CaseResult c1 = make_case("bert-fusion", 1, "standard");
  CaseResult c2 = make_case("O'Brien\"; DROP TABLE runs; --", 8, "none");
  c2.status = fb::CaseStatus::kFailed;
  c2.accuracy.passed = false;
  c2.accuracy.max_abs_err = 0.5;
  c2.accuracy.detail = "output 'logits' [0, 3, 17]: 0.5 vs 0.0 (atol 1e-4)";
  c2.error = "";
  int64_t run = 0;
  {
    ResultStore store(db);
    EXPECT_EQ(store.path(), db);
    EXPECT_FALSE(store.latest_run().has_value());
    run = store.begin_run(info);
    store.write_case(run, c1);
    store.write_case(run, c2);
    store.finish_run(run);
  }
  ResultStore store(db);  // reopened: everything comes from the file
  const fb::StoredRun loaded = store.load_run(run);
  EXPECT_EQ(loaded.id, run);
  expect_same(loaded.info, info);
  EXPECT_EQ(loaded.finished_at.size(), std::string("2024-05-01T12:00:00Z").size());  // ISO 8601 UTC, set at finish
  EXPECT_EQ(loaded.finished_at.back(), 'Z');
  EXPECT_EQ(loaded.case_count, 2);

  const auto cases = store.load_cases(run);
  ASSERT_EQ(cases.size(), 2u);
  EXPECT_EQ(cases[0].run_id, run);
  EXPECT_LT(cases[0].id, cases[1].id);
  expect_same(cases[0].result, c1);
  expect_same(cases[1].result, c2);

  RawDb raw(db);
  EXPECT_EQ(raw.count("samples"), 2 * (37 + 25));
  EXPECT_EQ(raw.count("layers"), 8);
  EXPECT_EQ(raw.count("build_logs"), 2);
  EXPECT_EQ(raw.count("case_profile_layers"), 8);
  EXPECT_EQ(raw.count("case_profile_nodes"), 16);
  EXPECT_EQ(raw.count("fusion_decisions"), 4);
  EXPECT_EQ(raw.count("runs"), 1);  // the scenario name was data, never SQL
}

TEST_F(StoreTest, ErrorCaseWithoutSamplesAndNaNAccuracyRoundTrips) {
  ResultStore store(file("results.db"));
  CaseResult c;
  c.spec.scenario = "broken";
  c.spec.model = "/models/broken.onnx";
  c.status = fb::CaseStatus::kError;
  c.error = "node 'Conv_3' (Conv): weight shape [3, 3] does not fit input [1, 8, 32, 32]";
  c.accuracy.max_abs_err = std::numeric_limits<double>::quiet_NaN();
  c.accuracy.cosine = std::numeric_limits<double>::quiet_NaN();
  c.speedup = std::numeric_limits<double>::infinity();
  int64_t run = store.begin_run(RunInfo{});
  store.write_case(run, c);
  auto cases = store.load_cases(run);
  ASSERT_EQ(cases.size(), 1u);
  const CaseResult& r = cases[0].result;
  EXPECT_EQ(r.status, fb::CaseStatus::kError);
  EXPECT_EQ(r.error, c.error);
  EXPECT_TRUE(std::isnan(r.accuracy.max_abs_err));
  EXPECT_TRUE(std::isnan(r.accuracy.cosine));
  EXPECT_EQ(r.accuracy.max_rel_err, 0);
  EXPECT_EQ(r.speedup, std::numeric_limits<double>::infinity());
  EXPECT_TRUE(r.engine.samples_ms.empty());
  EXPECT_TRUE(r.build_log.empty());
  EXPECT_TRUE(r.layers.empty());
  EXPECT_EQ(store.load_run(run).finished_at, "");  // never finished
}

TEST_F(StoreTest, ListsRunsOldestFirstAndFindsTheLatest) {
  ResultStore store(file("results.db"));
  RunInfo a = make_run_info(), b = make_run_info(), c = make_run_info();
  a.started_at = "2024-05-01T10:00:00Z";
  b.started_at = "2024-05-03T10:00:00Z";
  c.started_at = "2024-05-02T10:00:00Z";
  int64_t ia = store.begin_run(a), ib = store.begin_run(b), ic = store.begin_run(c);
  store.write_case(ib, make_case("s", 1, "none"));
  auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].id, ia);
  EXPECT_EQ(runs[1].id, ic);
  EXPECT_EQ(runs[2].id, ib);
  EXPECT_EQ(runs[2].case_count, 1);
  EXPECT_EQ(runs[0].case_count, 0);
  EXPECT_EQ(store.latest_run(), ib);
}

TEST_F(StoreTest, MissingRunIsAClearError) {
  const std::string db = file("results.db");
  ResultStore store(db);
  EXPECT_EQ(error_of([&] { store.load_run(7); }), "run 7 is not in " + db);
  EXPECT_NE(error_of([&] { store.load_cases(7); }).find("run 7 is not in " + db), std::string::npos);
  EXPECT_NE(error_of([&] { store.finish_run(7); }).find("run 7 is not in " + db), std::string::npos);
  EXPECT_NE(error_of([&] { store.write_case(7, make_case("s", 1, "none")); }).find("run 7 is not in"),
            std::string::npos);
  RawDb raw(db);
  EXPECT_EQ(raw.count("cases"), 0);
}

TEST_F(StoreTest, MovedStoreKeepsWorking) {
  ResultStore a(file("results.db"));
  int64_t run = a.begin_run(make_run_info());
  ResultStore b(std::move(a));
  b.write_case(run, make_case("s", 1, "none"));
  ResultStore c(file("other.db"));
  c = std::move(b);
  EXPECT_EQ(c.load_cases(run).size(), 1u);
  EXPECT_EQ(c.path(), file("results.db"));
}

// ---- schema versions and refusals ----

TEST_F(StoreTest, RecordsSchemaVersionAndReopensWithoutChange) {
  const std::string db = file("results.db");
  {
    ResultStore store(db);
    EXPECT_EQ(store.schema_version(), ResultStore::kSchemaVersion);
    store.begin_run(make_run_info());
  }
  {
    RawDb raw(db);
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(raw.db, "SELECT value FROM meta WHERE key = 'schema_version'", -1, &s,
                                 nullptr),
              SQLITE_OK);
    ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
    EXPECT_EQ(sqlite3_column_int(s, 0), ResultStore::kSchemaVersion);
    sqlite3_finalize(s);
    EXPECT_EQ(raw.count("meta"), 1);
  }
  ResultStore again(db);
  EXPECT_EQ(again.list_runs().size(), 1u);
  EXPECT_EQ(again.schema_version(), ResultStore::kSchemaVersion);
}

TEST_F(StoreTest, RefusesADatabaseFromANewerFusebench) {
  const std::string db = file("results.db");
  { ResultStore store(db); }
  {
    RawDb raw(db);
    raw.exec("UPDATE meta SET value = 99 WHERE key = 'schema_version'");
  }
  std::string msg = error_of([&] { ResultStore store(db); });
  EXPECT_EQ(msg, db + " has schema version 99; this fusebench understands up to " +
                     std::to_string(ResultStore::kSchemaVersion) + " — upgrade fusebench");
  RawDb raw(db);
  EXPECT_EQ(raw.count("meta WHERE key = 'schema_version' AND value = 99"), 1);  // untouched
}

TEST_F(StoreTest, RefusesGarbageNamingTheFileAndLeavesItAlone) {
  const std::string bin = file("random.db");
  {
    std::mt19937 rng(42);
    std::string bytes(8192, '\0');
    for (char& c : bytes) c = static_cast<char>(rng() & 0xff);
    std::ofstream(bin, std::ios::binary) << bytes;
  }
  const std::string text = file("notes.txt");
  std::ofstream(text) << "These are my notes, not a database.\nSecond line.\n";
  const std::string big_text = file("big.txt");
  {
    std::ofstream f(big_text);
    for (int i = 0; i < 2000; ++i) f << "line " << i << " of a text file that is not a database\n";
  }

  for (const std::string& path : {bin, text, big_text}) {
    const std::string before = read_bytes(path);
    std::string msg = error_of([&] { ResultStore store(path); });
    EXPECT_NE(msg.find(path), std::string::npos) << msg;
    EXPECT_NE(msg.find("not a SQLite database"), std::string::npos) << msg;
    EXPECT_EQ(read_bytes(path), before) << path << " was modified";
    EXPECT_FALSE(fs::exists(path + "-wal")) << path;
  }
}

TEST_F(StoreTest, RefusesAnotherApplicationsSqliteDatabase) {
  const std::string db = file("other.sqlite");
  {
    RawDb raw(db);
    raw.exec("CREATE TABLE contacts (name TEXT); INSERT INTO contacts VALUES ('ada')");
  }
  std::string msg = error_of([&] { ResultStore store(db); });
  EXPECT_NE(msg.find(db), std::string::npos) << msg;
  EXPECT_NE(msg.find("not a fusebench result store"), std::string::npos) << msg;
  RawDb raw(db);
  EXPECT_EQ(raw.count("sqlite_master WHERE type = 'table'"), 1);  // nothing was added
}

TEST_F(StoreTest, UnopenablePathNamesIt) {
  const std::string db = file("no/such/folder/results.db");
  std::string msg = error_of([&] { ResultStore store(db); });
  EXPECT_NE(msg.find(db), std::string::npos) << msg;
}

// A database written by fusebench 0.1.0 (schema version 1; tests/data/store_v1.sql is the
// sqlite3 .dump of a real run) opens, is upgraded in place, and keeps every row; figures
// version 1 did not measure read back as missing, and new cases can be added.
TEST_F(StoreTest, UpgradesAVersion1DatabaseInPlace) {
  const std::string db = file("v1.db");
  {
    std::ifstream f(std::string(FUSEBENCH_SOURCE_DIR) + "/tests/data/store_v1.sql");
    ASSERT_TRUE(f) << "tests/data/store_v1.sql";
    const std::string sql(std::istreambuf_iterator<char>(f), {});
    RawDb raw(db);
    raw.exec(sql);
    EXPECT_EQ(raw.count("meta WHERE key = 'schema_version' AND value = 1"), 1);
  }
  ResultStore store(db);
  EXPECT_EQ(store.schema_version(), ResultStore::kSchemaVersion);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].info.git_commit, "cda684f4e8cf");
  EXPECT_EQ(runs[0].info.compiler_flags, "");               // not recorded by version 1
  EXPECT_EQ(runs[0].info.scenarios, nlohmann::json::array());
  const auto cases = store.load_cases(runs[0].id);
  ASSERT_EQ(cases.size(), 2u);
  const CaseResult& r = cases[0].result;
  EXPECT_EQ(r.spec.scenario, "tiny");
  EXPECT_EQ(r.spec.batch, 2);
  EXPECT_EQ(r.engine.samples_ms.size(), r.engine.stats.n);
  EXPECT_GT(r.engine.stats.median, 0);
  EXPECT_EQ(r.stop_reason, "iteration-cap");
  EXPECT_TRUE(r.noisy);  // version 1's "did not converge" became the noisy flag
  EXPECT_TRUE(std::isnan(r.engine.stats.p95));
  EXPECT_TRUE(std::isnan(r.speedup_ci_low));
  EXPECT_TRUE(std::isnan(r.interference.other_cpu_ms));
  EXPECT_EQ(r.engine.minor_faults.max, 0);
  EXPECT_FALSE(r.spec.gate.max_regression.has_value());
  EXPECT_FALSE(r.spec.gate.min_speedup.has_value());  // version 1 did not store the gate block
  // Version 4: the case was timed on its run's host, in a single process; the layer
  // figures version 1 did not store read back as unknown, not as zero.
  EXPECT_EQ(r.timed_on.host, runs[0].info.host);
  EXPECT_EQ(r.timed_on.cpu_model, runs[0].info.cpu_model);
  EXPECT_EQ(r.timed_on.cores, runs[0].info.cores);
  EXPECT_EQ(r.isolation, "single-process");
  EXPECT_FALSE(r.worker_lost);
  EXPECT_EQ(runs[0].info.shard, "");
  ASSERT_FALSE(r.layers.empty());
  EXPECT_EQ(r.layers[0].kernel, "");
  EXPECT_TRUE(std::isnan(r.layers[0].flops));
  EXPECT_TRUE(r.layers[0].input_shapes.empty());
  EXPECT_EQ(r.process_noise.processes, 1);  // timed in one process, as everything before version 5
  EXPECT_TRUE(std::isnan(r.process_noise.speedup));
  EXPECT_TRUE(r.engine.sample_process.empty());
  // The keys stored by version 1 are the keys this build computes from the same configs:
  // history recorded before the store was rewritten stays matched.
  {
    RawDb raw(db);
    for (const auto& c : cases) {
      sqlite3_stmt* s = nullptr;
      ASSERT_EQ(sqlite3_prepare_v2(raw.db, ("SELECT case_key FROM cases WHERE id = " + std::to_string(c.id)).c_str(), -1,
                                   &s, nullptr),
                SQLITE_OK);
      ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
      EXPECT_EQ(c.result.spec.case_key(), reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
      sqlite3_finalize(s);
    }
  }
  // New cases go into the upgraded file beside the old ones.
  const int64_t run = store.begin_run(make_run_info());
  store.write_case(run, make_case("after-upgrade", 1, "standard"));
  EXPECT_EQ(store.load_cases(run).size(), 1u);
  ResultStore again(db);  // and it reopens without another upgrade
  EXPECT_EQ(again.list_runs().size(), 2u);
}

TEST_F(StoreTest, SamplesKeepTheirProcessAndCasesTheirSpread) {
  ResultStore store(file("results.db"));
  const int64_t run = store.begin_run(make_run_info());
  CaseResult c = make_case("s", 1, "none");
  c.spec.timing.processes = 2;
  c.spec.timing.alternation = "block";
  c.engine.sample_process.assign(c.engine.samples_ms.size(), 0);
  c.engine.sample_process.back() = 1;
  c.reference.sample_process.assign(c.reference.samples_ms.size(), 1);
  c.reference.sample_process.front() = 0;
  c.process_noise = {2, 0.03, 0.025, 0.004};
  store.write_case(run, c);
  const CaseResult r = store.load_cases(run).at(0).result;
  EXPECT_EQ(r.engine.sample_process, c.engine.sample_process);
  EXPECT_EQ(r.reference.sample_process, c.reference.sample_process);
  EXPECT_EQ(r.process_noise, c.process_noise);
  EXPECT_EQ(r.spec.timing.alternation, "block");
}

TEST_F(StoreTest, SummaryLoadSkipsSamplesLogsAndLayers) {
  ResultStore store(file("results.db"));
  const int64_t run = store.begin_run(make_run_info());
  const CaseResult c = make_case("s", 1, "none");
  store.write_case(run, c);
  const auto cases = store.load_cases(run, fb::CaseDetail::kSummary);
  ASSERT_EQ(cases.size(), 1u);
  const CaseResult& r = cases[0].result;
  EXPECT_TRUE(r.engine.samples_ms.empty());
  EXPECT_TRUE(r.layers.empty());
  EXPECT_TRUE(r.build_log.empty());
  EXPECT_EQ(r.engine.stats.median, c.engine.stats.median);
  EXPECT_EQ(r.speedup_ci_high, c.speedup_ci_high);
  EXPECT_EQ(r.spec.gate.min_speedup, 1.2);
}

TEST_F(StoreTest, TimingLoadKeepsSamplesAndSkipsLogsAndLayers) {
  ResultStore store(file("results.db"));
  const int64_t run = store.begin_run(make_run_info());
  const CaseResult c = make_case("s", 1, "none");
  ASSERT_FALSE(c.layers.empty());
  ASSERT_FALSE(c.build_log.empty());
  store.write_case(run, c);
  const auto cases = store.load_cases(run, fb::CaseDetail::kTiming);
  ASSERT_EQ(cases.size(), 1u);
  const CaseResult& r = cases[0].result;
  EXPECT_EQ(r.engine.samples_ms, c.engine.samples_ms);
  EXPECT_EQ(r.reference.samples_ms, c.reference.samples_ms);
  EXPECT_TRUE(r.layers.empty());
  EXPECT_TRUE(r.build_log.empty());
  EXPECT_EQ(r.engine.stats.median, c.engine.stats.median);
}

TEST_F(StoreTest, CaseFiguresMatchTheFullLoadWithoutParsingTheConfiguration) {
  ResultStore store(file("results.db"));
  const int64_t run = store.begin_run(make_run_info());
  CaseResult noisy = make_case("s", 1, "none");
  noisy.noisy = true;
  store.write_case(run, noisy);
  CaseResult failed = make_case("s", 8, "standard");
  failed.status = fb::CaseStatus::kError;
  failed.error = "build failed";
  failed.engine = {};
  failed.reference = {};
  failed.speedup = failed.speedup_ci_low = failed.speedup_ci_high = std::nan("");
  store.write_case(run, failed);

  const auto full = store.load_cases(run, fb::CaseDetail::kSummary);
  const auto figures = store.load_case_figures(run);
  ASSERT_EQ(figures.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const fb::CaseFigures want = fb::figures_of(full[i].result);
    const fb::CaseFigures& got = figures[i];
    EXPECT_EQ(got.case_key, want.case_key);
    EXPECT_EQ(got.status, want.status);
    EXPECT_EQ(got.noisy, want.noisy);
    // Exactly what the full load reads, NaN where it reads NaN.
    const auto same = [](double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); };
    for (auto [g, w] : {std::pair{got.engine, want.engine}, {got.reference, want.reference}, {got.speedup, want.speedup}})
      EXPECT_TRUE(same(g.median, w.median) && same(g.low, w.low) && same(g.high, w.high))
          << i << ": " << g.median << " [" << g.low << ", " << g.high << "] against " << w.median << " [" << w.low << ", "
          << w.high << "]";
  }
  EXPECT_EQ(figures[0].case_key, noisy.spec.case_key());
  EXPECT_TRUE(figures[0].noisy);
  EXPECT_EQ(figures[1].status, fb::CaseStatus::kError);
  EXPECT_TRUE(std::isnan(figures[1].speedup.median));
  EXPECT_THROW(store.load_case_figures(run + 1), fb::Error);
}

TEST_F(StoreTest, AResultReplacesTheRecordOfALostAttemptInOneTransaction) {
  ResultStore store(file("results.db"));
  const int64_t run = store.begin_run(make_run_info());
  CaseResult lost = make_case("s", 1, "none");
  lost.status = fb::CaseStatus::kError;
  lost.error = "worker rank 2 (pid 4242 on node-07) died while running this case";
  lost.worker_lost = true;
  store.write_case(run, lost);
  const CaseResult kept = make_case("s", 8, "none");
  store.write_case(run, kept);
  const int64_t lost_id = store.load_cases(run, fb::CaseDetail::kSummary)[0].id;

  // Only a lost record of that run gives way; a real result is never deleted.
  const int64_t kept_id = store.load_cases(run, fb::CaseDetail::kSummary)[1].id;
  store.write_case(run, make_case("s", 2, "none"), kept_id);
  EXPECT_EQ(store.load_cases(run).size(), 3u);

  const CaseResult redone = make_case("s", 1, "none");
  store.write_case(run, redone, lost_id);
  const auto cases = store.load_cases(run);
  ASSERT_EQ(cases.size(), 3u);
  expect_same(cases[0].result, kept);
  expect_same(cases[2].result, redone);
  for (const auto& c : cases) EXPECT_FALSE(c.result.worker_lost);
}

TEST_F(StoreTest, ReadOnlyOpeningNeverChangesTheFileAndWantsThisSchema) {
  const std::string db = file("results.db");
  {
    ResultStore store(db);
    store.write_case(store.begin_run(make_run_info()), make_case("s", 1, "none"));
  }
  {
    ResultStore ro(db, ResultStore::Mode::kReadOnly);
    EXPECT_EQ(ro.load_cases(1).size(), 1u);
    EXPECT_NE(error_of([&] { ro.begin_run(make_run_info()); }).find("read-only"), std::string::npos);
  }
  EXPECT_NE(error_of([&] { ResultStore(file("absent.db"), ResultStore::Mode::kReadOnly); }).find("no such results database"),
            std::string::npos);
  EXPECT_FALSE(fs::exists(file("absent.db")));
  {
    RawDb raw(db);
    raw.exec("UPDATE meta SET value = 3 WHERE key = 'schema_version'");
  }
  const std::string msg = error_of([&] { ResultStore(db, ResultStore::Mode::kReadOnly); });
  EXPECT_NE(msg.find(db + " has schema version 3"), std::string::npos) << msg;
}

// ---- one transaction per case ----

TEST_F(StoreTest, AFailedCaseWriteLeavesNoPartialRows) {
  const std::string db = file("results.db");
  ResultStore store(db);
  int64_t run = store.begin_run(make_run_info());
  const CaseResult good = make_case("s", 1, "standard");
  store.write_case(run, good);

  // Two layers with the same index violate the layers primary key; layers are written
  // last, so the case row, both measurements, all samples and the build log are already
  // in when it fails.
  CaseResult dup_layer = make_case("s", 8, "standard");
  dup_layer.layers[2].index = 1;
  std::string msg = error_of([&] { store.write_case(run, dup_layer); });
  EXPECT_NE(msg.find(db), std::string::npos) << msg;
  EXPECT_NE(msg.find("s b=8 fp32 standard t=2"), std::string::npos) << msg;

  // A NaN timing sample is refused half-way through the reference samples.
  CaseResult nan_sample = make_case("s", 4, "none");
  nan_sample.reference.samples_ms[10] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_NE(error_of([&] { store.write_case(run, nan_sample); }), "");

  auto cases = store.load_cases(run);
  ASSERT_EQ(cases.size(), 1u);
  expect_same(cases[0].result, good);
  {
    RawDb raw(db);
    EXPECT_EQ(raw.count("cases"), 1);
    EXPECT_EQ(raw.count("measurements"), 2);
    EXPECT_EQ(raw.count("samples"), 37 + 25);
    EXPECT_EQ(raw.count("build_logs"), 1);
    EXPECT_EQ(raw.count("layers"), 4);
  }
  EXPECT_EQ(store.load_run(run).case_count, 1);

  // No transaction was left open: the store goes on writing.
  store.write_case(run, make_case("s", 2, "none"));
  EXPECT_EQ(store.load_cases(run).size(), 2u);
}

// ---- concurrency ----

TEST_F(StoreTest, ReaderWorksWhileAnotherStoreWrites) {
  const std::string db = file("results.db");
  ResultStore writer(db);
  int64_t run = writer.begin_run(make_run_info());
  writer.write_case(run, make_case("s", 1, "none"));

  ResultStore reader(db);
  EXPECT_EQ(reader.load_cases(run).size(), 1u);
  writer.write_case(run, make_case("s", 2, "none"));
  EXPECT_EQ(reader.load_cases(run).size(), 2u);
  EXPECT_EQ(reader.load_run(run).case_count, 2);

  // Another process holds the write lock mid-transaction: readers go on (WAL) and see the
  // committed state; a writer waits, then fails with a message that says why.
  RawDb other(db);
  other.exec("BEGIN IMMEDIATE; INSERT INTO meta (key, value) VALUES ('held', 1)");
  EXPECT_EQ(reader.load_cases(run).size(), 2u);
  ResultStore late_reader(db);  // opening an existing store needs no write lock
  EXPECT_EQ(late_reader.list_runs().size(), 1u);
  writer.set_busy_timeout_ms(50);
  std::string msg = error_of([&] { writer.write_case(run, make_case("s", 4, "none")); });
  EXPECT_NE(msg.find(db + " is locked by another process"), std::string::npos) << msg;
  other.exec("COMMIT");

  writer.write_case(run, make_case("s", 4, "none"));
  EXPECT_EQ(reader.load_cases(run).size(), 3u);
}

// A report or compare holding a read transaction open (a snapshot, as load_cases takes one)
// must never hold up a running benchmark: with WAL the writer commits at once, and the
// reader keeps its snapshot until it ends.
TEST_F(StoreTest, AnOpenReaderNeverBlocksTheWriter) {
  const std::string db = file("results.db");
  ResultStore writer(db);
  const int64_t run = writer.begin_run(make_run_info());
  writer.write_case(run, make_case("s", 1, "none"));
  writer.set_busy_timeout_ms(0);  // any wait for a lock would fail at once

  RawDb reader(db);
  reader.exec("BEGIN");
  EXPECT_EQ(reader.count("cases"), 1);  // the read transaction now holds its snapshot
  for (int b = 2; b <= 5; ++b) writer.write_case(run, make_case("s", b, "none"));
  writer.finish_run(run);
  EXPECT_EQ(reader.count("cases"), 1);  // still its snapshot
  reader.exec("COMMIT");
  EXPECT_EQ(reader.count("cases"), 5);
  ResultStore second(db);
  EXPECT_EQ(second.load_cases(run).size(), 5u);
}

// ---- case identity ----

TEST(CaseSpec, CaseKeyIsStableAndDependsOnlyOnWhatAffectsTheNumbers) {
  CaseSpec a;
  a.scenario = "bert";
  a.model = "zoo:bert";
  a.model_hash = "0123abcd";
  a.precision = fb::Precision::FP32;
  a.batch = 8;
  a.fusion = fb::FusionLevel::Standard;
  a.threads = 2;
  a.seed = 1234;
  // Pinned: changing the key's recipe breaks every stored history, so it must be deliberate.
  EXPECT_EQ(a.case_key(), "0e2ce4f016c4808b");
  EXPECT_EQ(a.case_key(),
            fb::sha256_hex(R"(0123abcd|{"batch":8,"fusion":"standard","precision":"fp32","seed":1234,"threads":2})")
                .substr(0, 16));

  CaseSpec same = a;
  same.scenario = "renamed";
  same.scenario_file = "/elsewhere/renamed.json";
  same.model = "/models/bert-copy.onnx";  // same content, other path
  same.timing.warmup_ms = 1;
  same.timing.min_iterations = 3;
  same.timing.max_seconds = 99;
  same.accuracy.atol = 1;
  EXPECT_EQ(same.case_key(), a.case_key());

  auto differs = [&](auto change) {
    CaseSpec b = a;
    change(b);
    return b.case_key() != a.case_key();
  };
  EXPECT_TRUE(differs([](CaseSpec& b) { b.batch = 16; }));
  EXPECT_TRUE(differs([](CaseSpec& b) { b.fusion = fb::FusionLevel::None; }));
  EXPECT_TRUE(differs([](CaseSpec& b) { b.model_hash = "0123abce"; }));
  EXPECT_TRUE(differs([](CaseSpec& b) { b.precision = fb::Precision::FP16; }));
  EXPECT_TRUE(differs([](CaseSpec& b) { b.threads = 4; }));
  EXPECT_TRUE(differs([](CaseSpec& b) { b.seed = 1; }));
}

TEST(CaseSpec, KeyAndStoredConfigOfACaseWithEverySettingArePinned) {
  // The key and config_json identify a case in stored databases: their bytes may change only
  // deliberately. Pinned from the code before the case table (harness/cases/case_fields.h).
  CaseSpec s{.scenario = "all",
             .scenario_file = "/s/all.json",
             .model = "zoo:mlp",
             .model_hash = "00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff",
             .precision = fb::Precision::FP32,
             .batch = 1,
             .fusion = fb::FusionLevel::None,
             .threads = 1,
             .timing = {5.5, 2, 7, 900, 0.25, 0.125, "speedup-ci", {0, 1}, 12.5, 0.5, 3, 40, 7, 0.04, "block", 4, 0.5, 0.1, 3},
             .accuracy = {0.001, 0.02, true, 0.99},
             .gate = {1.1, 0.05, 0.001},
             .fusion_limits = {{"/a/*"}, {"Softmax", "Gelu"}, {"t1"}},
             .precision_constraints = {"obey", {{"Softmax", fb::Precision::FP32}, {"/x/*", fb::Precision::BF16}}},
             .seed = std::numeric_limits<uint64_t>::max(),
             .plugins = {.cost = false}};
  EXPECT_EQ(s.key_json(),
            R"({"batch":1,"fusion":"none","fusion_limits":{"exclude_nodes":["/a/*"],"exclude_ops":["Softmax","Gelu"],)"
            R"("partition_points":["t1"]},"precision":"fp32","precision_constraints":{"layers":[["Softmax","fp32"],)"
            R"(["/x/*","bf16"]],"mode":"obey"},"seed":18446744073709551615,"threads":1})");
  EXPECT_EQ(s.case_key(), "6542504e0299725d");
  EXPECT_EQ(s.to_json().dump(),
            R"({"accuracy":{"atol":0.001,"elementwise":true,"min_cosine":0.99,"rtol":0.02},"batch":1,)"
            R"("fusion":"none","fusion_limits":{"exclude_nodes":["/a/*"],"exclude_ops":["Softmax","Gelu"],)"
            R"("partition_points":["t1"]},"gate":{"max_abs_err":0.001,"max_regression":0.05,"min_speedup":1.1},)"
            R"("model":"zoo:mlp","model_hash":"00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff00ff",)"
            R"("plugins":{"cost":false,"insert":[],"libraries":[]},"precision":"fp32",)"
            R"("precision_constraints":{"layers":[["Softmax","fp32"],["/x/*","bf16"]],"mode":"obey"},)"
            R"("scenario":"all","scenario_file":"/s/all.json","seed":18446744073709551615,"threads":1,)"
            R"("timing":{"alternation":"block","block_iterations":4,"disturbance_cpus":0.5,"disturbance_retries":3,)"
            R"("disturbance_steal":0.1,"inject_delay_us":12.5,"inject_slowdown":0.5,"max_iterations":900,"max_pairs":7,)"
            R"("max_seconds":0.25,"min_iterations":7,"paired_detectable":0.04,"pin_cpus":[0,1],"process_samples":40,)"
            R"("processes":3,"stop_rule":"speedup-ci",)"
            R"("target_rel_ci":0.125,"warmup_iterations":2,"warmup_ms":5.5}})");
  EXPECT_EQ(CaseSpec::from_json(s.to_json()), s);
  EXPECT_EQ(build_config_to_json(build_config_of(s)).dump(),
            R"({"batch":1,"constant_inputs":{},"exclude_nodes":["/a/*"],"exclude_op_types":["Softmax","Gelu"],)"
            R"("fusion":"none","input_shapes":{},"layer_precisions":[["Softmax","fp32"],["/x/*","bf16"]],)"
            R"("partition_points":["t1"],"precision":"fp32","precision_mode":"obey","threads":1,"winograd":true})");

  // An int8 case adds its calibration to the key and the stored config (the cache file is
  // where thresholds are kept, so it is stored but not keyed); other cases have neither.
  CaseSpec q = s;
  q.precision = fb::Precision::INT8;
  q.calibration.cache = "c.json";
  EXPECT_NE(q.key_json().find(R"("calibration":{"batches":8,"data":[],"method":"entropy","percentile":99.99,"seed":7})"),
            std::string::npos)
      << q.key_json();
  EXPECT_NE(q.to_json().dump().find(R"("cache":"c.json")"), std::string::npos);
  EXPECT_EQ(CaseSpec::from_json(q.to_json()), q);
  EXPECT_NE(build_config_to_json(build_config_of(q)).dump().find(R"("calibration":{"batches":8,"data":[],"method":"entropy")"),
            std::string::npos);
}

TEST(CaseSpec, LabelNamesTheCase) {
  CaseSpec s;
  s.scenario = "bert";
  s.batch = 8;
  s.threads = 2;
  EXPECT_EQ(s.label(), "bert b=8 fp32 standard t=2");
}

TEST(CaseSpec, JsonRoundTripAndFieldErrors) {
  CaseSpec s = make_case("json", 3, "aggressive").spec;
  CaseSpec back = CaseSpec::from_json(s.to_json());
  EXPECT_EQ(back.to_json(), s.to_json());
  EXPECT_EQ(back.seed, s.seed);

  // Missing keys keep their defaults.
  CaseSpec partial = CaseSpec::from_json(nlohmann::json{{"batch", 4}});
  EXPECT_EQ(partial.batch, 4);
  EXPECT_EQ(partial.fusion, fb::FusionLevel::Standard);
  EXPECT_EQ(partial.timing.min_iterations, 20);

  EXPECT_NE(error_of([] { CaseSpec::from_json(nlohmann::json{{"batch", "eight"}}); }).find("'batch'"),
            std::string::npos);
  EXPECT_NE(error_of([] { CaseSpec::from_json(nlohmann::json{{"batch", 2.5}}); }).find("'batch'"),
            std::string::npos);
  EXPECT_NE(error_of([] {
              CaseSpec::from_json(nlohmann::json{{"timing", {{"min_iterations", "many"}}}});
            }).find("'timing.min_iterations'"),
            std::string::npos);
  EXPECT_NE(error_of([] { CaseSpec::from_json(nlohmann::json{{"seed", -1}}); }).find("'seed'"),
            std::string::npos);
  EXPECT_NE(error_of([] { CaseSpec::from_json(nlohmann::json::array()); }), "");
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(fb::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(fb::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(fb::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(fb::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Lengths around the padding boundary (55, 56, 64 bytes).
  EXPECT_EQ(fb::sha256_hex(std::string(55, 'a')),
            "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(fb::sha256_hex(std::string(56, 'a')),
            "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(fb::sha256_hex(std::string(64, 'a')),
            "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  EXPECT_EQ(fb::sha256_hex_portable(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// The SHA-instruction path (where this CPU has one) and the portable one agree on every
// length across several blocks and on bytes of every value.
TEST(Sha256, TheFastPathMatchesThePortableOne) {
  std::string bytes;
  for (int i = 0; i < 1000; ++i) bytes.push_back(static_cast<char>((i * 131 + 7) & 0xff));
  for (size_t n = 0; n <= bytes.size(); n += (n < 200 ? 1 : 37))
    ASSERT_EQ(fb::sha256_hex(std::string_view(bytes).substr(0, n)),
              fb::sha256_hex_portable(std::string_view(bytes).substr(0, n)))
        << n << " bytes";
}

TEST_F(StoreTest, ProfilesAndCachedPeaksRoundTrip) {
  const std::string db = file("results.db");
  ResultStore store(db);
  EXPECT_FALSE(store.cached_peaks("h", "cpu", 2).has_value());
  store.store_peaks("h", "cpu", 2, fb::MachinePeaks{123.5, 45.25});
  auto peaks = store.cached_peaks("h", "cpu", 2);
  ASSERT_TRUE(peaks.has_value());
  EXPECT_EQ(peaks->gflops, 123.5);
  EXPECT_EQ(peaks->gbps, 45.25);
  EXPECT_FALSE(store.cached_peaks("h", "cpu", 1).has_value());  // per thread count

  fb::StoredProfile sp;
  sp.model = "zoo:bert";
  sp.model_hash = "abc";
  sp.config_json = "{}";
  sp.profile.iterations = 7;
  sp.profile.total_ms = 1.5;
  sp.profile.layers.push_back(fb::LayerProfile{0, "l0", "fusebench.LayerNorm", "k", 1.5, 10, 20, {"/a/X", "/a/Y"}});
  sp.profile.nodes.push_back(fb::NodeProfile{"/a/X", "/a/", 0, 1.0, true});
  sp.profile.nodes.push_back(fb::NodeProfile{"/a/Y", "/a/", 0, 0.5, true});
  const int64_t id = store.write_profile(sp);
  sqlite3* raw = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &raw), SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(raw, "SELECT COUNT(*), SUM(ms) FROM profile_nodes WHERE profile_id = ?1", -1, &s, nullptr), SQLITE_OK);
  sqlite3_bind_int64(s, 1, id);
  ASSERT_EQ(sqlite3_step(s), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(s, 0), 2);
  EXPECT_DOUBLE_EQ(sqlite3_column_double(s, 1), 1.5);
  sqlite3_finalize(s);
  sqlite3_close(raw);
}
