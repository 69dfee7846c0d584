// The HTML report: structure per scenario, formatted figures, and that every string taken
// from stored data is escaped.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "engine/ir/error.h"
#include "harness/result_store.h"
#include "reports/html_report.h"

namespace fs = std::filesystem;
using fb::CaseResult;
using fb::ResultStore;

namespace {

class ReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("fusebench_test_report_" + std::string(info->name()) + "_" + std::to_string(::getpid()));
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

size_t count(const std::string& haystack, const std::string& needle) {
  size_t n = 0;
  for (size_t at = haystack.find(needle); at != std::string::npos; at = haystack.find(needle, at + 1)) ++n;
  return n;
}

fb::Measurement timed(const std::string& executor, double median_ms) {
  fb::Measurement m;
  m.executor = executor;
  m.samples_ms = {median_ms * 0.99, median_ms, median_ms * 1.2};
  m.stats.n = 3;
  m.stats.median = median_ms;
  m.stats.p90 = median_ms * 1.2;
  m.stats.min = median_ms * 0.99;
  m.stats.max = median_ms * 1.2;
  m.items_per_s = 1000 / median_ms;
  return m;
}

CaseResult make_case(const std::string& scenario, int64_t batch, const std::string& fusion,
                     double engine_ms, double reference_ms) {
  CaseResult r;
  r.spec.scenario = scenario;
  r.spec.scenario_file = "/scenarios/" + scenario + ".json";
  r.spec.model = "zoo:bert?layers=4&hidden=256";
  r.spec.model_hash = "abc123";
  r.spec.batch = batch;
  r.spec.fusion = fusion;
  r.spec.threads = 2;
  r.engine = timed("engine", engine_ms);
  r.reference = timed("reference", reference_ms);
  r.speedup = reference_ms / engine_ms;
  r.accuracy.max_abs_err = 1.5e-6;
  r.accuracy.cosine = 0.9999999;
  r.build_ms = 42;
  r.onnx_nodes = 12;
  r.build_log = "fused 3 MatMul+Add pairs\n";
  fb::LayerRecord l;
  l.index = 0;
  l.name = "fused_matmul_0";
  l.kind = "fusebench.FusedMatMul";
  l.sources = {"/layer.0/MatMul", "/layer.0/Add"};
  r.layers.push_back(l);
  return r;
}

fb::RunInfo run_info(const std::string& started_at) {
  fb::RunInfo i;
  i.started_at = started_at;
  i.git_commit = "0123456789ab";
  i.git_dirty = true;
  i.host = "bench-01";
  i.cpu_model = "Test CPU @ 3.0GHz";
  i.cores = 16;
  i.memory_bytes = int64_t(64) << 30;
  i.kernel = "Linux 6.1";
  i.compiler = "g++ 12.2.0";
  i.library_versions = {{"onednn", "2.6.3"}, {"sqlite", "3.40.1"}};
  i.fusebench_version = "0.1.0";
  i.command = "fusebench run a.json --db results.db";
  return i;
}

const std::string kHostile = "<script>alert(1)</script>";

// One run: scenario "bert-fusion" with two passing cases, a hostile scenario with a case in
// error and a failed one, every string of the latter hostile too.
int64_t fill(ResultStore& store) {
  int64_t run = store.begin_run(run_info("2024-05-01T12:00:00Z"));
  store.write_case(run, make_case("bert-fusion", 1, "none", 2.0, 5.0));       // 2.50x
  store.write_case(run, make_case("bert-fusion", 8, "standard", 10.0, 8.0));  // 0.80x

  CaseResult err = make_case(kHostile, 1, "standard", 1, 1);
  err.status = "error";
  err.error = "node '<b>Conv_1</b>' (Conv): weights & bias \"mismatch\"";
  err.engine = {};
  err.reference = {};
  err.speedup = 0;
  err.spec.model = "/models/<img src=x onerror=alert(2)>.onnx";
  err.build_log = "</pre><script>alert(3)</script>";
  err.layers[0].name = "<svg onload=alert(4)>";
  err.layers[0].sources = {"<iframe>"};
  store.write_case(run, err);

  CaseResult failed = make_case(kHostile, 4, "standard", 1.0, 3.0);
  failed.status = "failed";
  failed.accuracy.passed = false;
  failed.accuracy.max_abs_err = 0.25;
  failed.accuracy.detail = "output <logits> differs at [0, 3]";
  store.write_case(run, failed);
  store.finish_run(run);
  return run;
}

}  // namespace

TEST_F(ReportTest, HasSummaryScenariosRowsAndSpeedups) {
  ResultStore store(file("results.db"));
  fill(store);
  const std::string html = fb::render_html_report(store);

  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // Summary.
  EXPECT_NE(html.find("2024-05-01T12:00:00Z"), std::string::npos);
  EXPECT_NE(html.find("0123456789ab"), std::string::npos);
  EXPECT_NE(html.find("dirty"), std::string::npos);
  EXPECT_NE(html.find("Test CPU @ 3.0GHz"), std::string::npos);
  EXPECT_NE(html.find("onednn"), std::string::npos);
  EXPECT_NE(html.find("2 passed"), std::string::npos);
  EXPECT_NE(html.find("1 failed"), std::string::npos);
  EXPECT_NE(html.find("1 errors"), std::string::npos);
  // One section per scenario, one row per case.
  EXPECT_EQ(count(html, "<section class=\"scenario\""), 2u);
  EXPECT_NE(html.find("<h2>Scenario: bert-fusion</h2>"), std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"case"), 4u);
  EXPECT_EQ(count(html, "<tr class=\"case bad\""), 2u);
  // Figures.
  EXPECT_NE(html.find("2.50×"), std::string::npos);
  EXPECT_NE(html.find("0.80×"), std::string::npos);
  EXPECT_NE(html.find("3.00×"), std::string::npos);
  EXPECT_NE(html.find("2.000 <span class=\"p90\">[2.400]</span>"), std::string::npos);
  EXPECT_NE(html.find("1.50e-06"), std::string::npos);
  // Chart, details, layers, build log.
  EXPECT_EQ(count(html, "<svg"), 2u);
  EXPECT_NE(html.find("1.0×"), std::string::npos);
  EXPECT_EQ(count(html, "<details"), 4u);
  EXPECT_NE(html.find("fusebench.FusedMatMul"), std::string::npos);
  EXPECT_NE(html.find("/layer.0/MatMul, /layer.0/Add"), std::string::npos);
  EXPECT_NE(html.find("<pre>fused 3 MatMul+Add pairs\n</pre>"), std::string::npos);
  // Self-contained: no scripts, nothing fetched.
  EXPECT_EQ(html.find("http://"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);
  EXPECT_EQ(html.find("src=\""), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
}

TEST_F(ReportTest, EscapesEveryStringFromData) {
  ResultStore store(file("results.db"));
  fill(store);
  const std::string html = fb::render_html_report(store);

  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find("<h2>Scenario: &lt;script&gt;alert(1)&lt;/script&gt;</h2>"), std::string::npos);
  EXPECT_EQ(html.find("<b>Conv_1</b>"), std::string::npos);
  EXPECT_NE(html.find("node &#39;&lt;b&gt;Conv_1&lt;/b&gt;&#39; (Conv): weights &amp; bias &quot;mismatch&quot;"),
            std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<iframe"), std::string::npos);
  EXPECT_EQ(html.find("<svg onload"), std::string::npos);
  EXPECT_NE(html.find("&lt;svg onload=alert(4)&gt;"), std::string::npos);
  EXPECT_NE(html.find("<pre>&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;</pre>"), std::string::npos);
  EXPECT_NE(html.find("output &lt;logits&gt; differs at [0, 3]"), std::string::npos);
  EXPECT_EQ(count(html, "<tr class=\"error-row\""), 2u);
}

TEST_F(ReportTest, ReportsAChosenRun) {
  ResultStore store(file("results.db"));
  int64_t first = fill(store);
  int64_t second = store.begin_run(run_info("2024-05-02T12:00:00Z"));
  store.write_case(second, make_case("later", 2, "none", 1.0, 1.25));

  const std::string latest = fb::render_html_report(store);
  EXPECT_NE(latest.find("Scenario: later"), std::string::npos);
  EXPECT_NE(latest.find("1.25×"), std::string::npos);
  EXPECT_NE(latest.find("not finished"), std::string::npos);
  EXPECT_EQ(latest.find("bert-fusion"), std::string::npos);

  const std::string chosen = fb::render_html_report(store, first);
  EXPECT_NE(chosen.find("Scenario: bert-fusion"), std::string::npos);
  EXPECT_EQ(chosen.find("Scenario: later"), std::string::npos);

  EXPECT_THROW(fb::render_html_report(store, 99), fb::Error);
}

TEST_F(ReportTest, EmptyStoreIsAClearError) {
  const std::string db = file("results.db");
  ResultStore store(db);
  try {
    fb::render_html_report(store);
    FAIL() << "expected fb::Error";
  } catch (const fb::Error& e) {
    EXPECT_NE(std::string(e.what()).find(db), std::string::npos) << e.what();
  }
}

TEST_F(ReportTest, WritesTheFileOrSaysWhyNot) {
  ResultStore store(file("results.db"));
  fill(store);
  const std::string out = file("report.html");
  fb::write_html_report(store, out);
  std::ifstream f(out, std::ios::binary);
  std::string written((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(written, fb::render_html_report(store));
  EXPECT_FALSE(fs::exists(out + ".tmp"));

  const std::string bad = file("no/such/folder/report.html");
  try {
    fb::write_html_report(store, bad);
    FAIL() << "expected fb::Error";
  } catch (const fb::Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
  }
}

TEST(HtmlEscape, EscapesTheFiveSpecialCharacters) {
  EXPECT_EQ(fb::html_escape("a<b>&\"'c"), "a&lt;b&gt;&amp;&quot;&#39;c");
  EXPECT_EQ(fb::html_escape("plain ünïcödé"), "plain ünïcödé");
  EXPECT_EQ(fb::html_escape(""), "");
}
