// The report data model and the HTML report: verdicts against a baseline, history with
// change points, environment differences, the engine view from stored profiles, formatted
// figures, and that every string taken from stored data is escaped (in text, attributes and
// the JSON the charts read).
#include <gtest/gtest.h>

#include <functional>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "engine/ir/error.h"
#include "engine/plan/build_config_json.h"
#include "harness/store/result_store.h"
#include "reports/export.h"
#include "reports/html_report.h"
#include "reports/junit.h"
#include "reports/report_model.h"
#include "reports/svg_charts.h"

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
  m.stats.ci_low = median_ms * 0.99;
  m.stats.ci_high = median_ms * 1.2;
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
  r.spec.fusion = fb::parse_fusion_level(fusion);
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
  err.status = fb::CaseStatus::kError;
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
  failed.status = fb::CaseStatus::kFailed;
  failed.accuracy.passed = false;
  failed.accuracy.max_abs_err = 0.25;
  failed.accuracy.detail = "output <logits> differs at [0, 3]";
  store.write_case(run, failed);
  store.finish_run(run);
  return run;
}

}  // namespace

TEST_F(ReportTest, HasVerdictsScenariosRowsAndFigures) {
  ResultStore store(file("results.db"));
  fill(store);
  const std::string html = fb::render_html_report(store);

  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("</html>"), std::string::npos);
  // Verdicts first: a failed and an errored case make the banner red; no baseline.
  EXPECT_LT(html.find("id=\"banner\""), html.find("id=\"environment\""));
  EXPECT_NE(html.find("<div class=\"banner red\" id=\"banner\"><strong>Attention.</strong> 2 of 4 cases fail the gate; 1 errored"),
            std::string::npos);
  EXPECT_NE(html.find("No baseline: this is the first run"), std::string::npos);
  // Environment.
  EXPECT_NE(html.find("2024-05-01T12:00:00Z"), std::string::npos);
  EXPECT_NE(html.find("0123456789ab (dirty)"), std::string::npos);
  EXPECT_NE(html.find("Test CPU @ 3.0GHz"), std::string::npos);
  EXPECT_NE(html.find("Library onednn"), std::string::npos);
  // One section per scenario, one row and one details per case.
  EXPECT_EQ(count(html, "<section class=\"scenario\""), 2u);
  EXPECT_NE(html.find("<h2>Scenario bert-fusion</h2>"), std::string::npos);
  EXPECT_EQ(count(html, "<details class=\"case\""), 4u);
  EXPECT_EQ(count(html, "<tr class=\"bad\"><td><a class=\"nowrap\" href=\"#case-"), 2u);
  // Figures, with their intervals.
  EXPECT_NE(html.find("2.50×"), std::string::npos);
  EXPECT_NE(html.find("0.80×"), std::string::npos);
  EXPECT_NE(html.find("3.00×"), std::string::npos);
  EXPECT_NE(html.find("2.000 <span class=\"ci\">[1.980, 2.400]</span>"), std::string::npos);
  EXPECT_NE(html.find("1.50e-06"), std::string::npos);
  // Layers (no profile: engine order, no times), build log.
  EXPECT_NE(html.find("fusebench.FusedMatMul"), std::string::npos);
  EXPECT_NE(html.find("<summary>2 nodes</summary><ul><li class=\"mono wrap\">/layer.0/MatMul</li>"), std::string::npos);
  EXPECT_NE(html.find("<pre>fused 3 MatMul+Add pairs\n</pre>"), std::string::npos);
  EXPECT_NE(html.find("No stored profile matches this case"), std::string::npos);
  // Self-contained: nothing to fetch, and a policy that forbids fetching.
  EXPECT_NE(html.find("Content-Security-Policy\" content=\"default-src 'none'"), std::string::npos);
  EXPECT_EQ(html.find("src=\""), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("href=\"http"), std::string::npos);
  EXPECT_EQ(html.find("url(http"), std::string::npos);
}

TEST_F(ReportTest, EscapesEveryStringFromData) {
  ResultStore store(file("results.db"));
  fill(store);
  const std::string html = fb::render_html_report(store);

  EXPECT_EQ(html.find(kHostile), std::string::npos);
  EXPECT_EQ(count(html, "<script"), 2u);  // the data block and the page's script, nothing else
  EXPECT_EQ(count(html, "</script>"), 2u);
  EXPECT_NE(html.find("<h2>Scenario &lt;script&gt;alert(1)&lt;/script&gt;</h2>"), std::string::npos);
  EXPECT_EQ(html.find("<b>Conv_1</b>"), std::string::npos);
  EXPECT_NE(html.find("node &#39;&lt;b&gt;Conv_1&lt;/b&gt;&#39; (Conv): weights &amp; bias &quot;mismatch&quot;"),
            std::string::npos);
  EXPECT_EQ(html.find("<img"), std::string::npos);
  EXPECT_EQ(html.find("<iframe"), std::string::npos);
  EXPECT_EQ(html.find("<svg onload"), std::string::npos);
  EXPECT_NE(html.find("&lt;svg onload=alert(4)&gt;"), std::string::npos);
  EXPECT_NE(html.find("<pre>&lt;/pre&gt;&lt;script&gt;alert(3)&lt;/script&gt;</pre>"), std::string::npos);
  EXPECT_NE(html.find("output &lt;logits&gt; differs at [0, 3]"), std::string::npos);
}

// Names with every kind of trouble, in every place a name can go: text, attributes, SVG
// labels and tooltips, and the JSON the history charts read.
TEST_F(ReportTest, HostileNamesStayTextEverywhere) {
  const std::string evil = "a<script>x()</script> \"q\" 'q' </textarea> <!-- \nline two größe ✓ 日本 \xE2\x80\xA8";
  ResultStore store(file("results.db"));
  for (int night = 0; night < 3; ++night) {
    fb::RunInfo info = run_info("2024-05-0" + std::to_string(night + 1) + "T12:00:00Z");
    info.host = evil;
    info.library_versions = {{evil, evil}};
    const int64_t run = store.begin_run(info);
    CaseResult r = make_case(evil, 1, "none", 2.0, 5.0);
    r.spec.model = evil;
    r.layers[0].name = evil;
    r.layers[0].sources = {evil, evil + "2"};
    r.build_log = evil;
    r.accuracy.detail = evil;
    store.write_case(run, r);
    store.write_case(run, make_case(evil, 2, "none", 2.0, 5.0));
    store.finish_run(run);
  }
  const std::string html = fb::render_html_report(store);
  EXPECT_EQ(count(html, "<script"), 2u);
  EXPECT_EQ(count(html, "</script>"), 2u);
  EXPECT_EQ(html.find("</textarea>"), std::string::npos);
  EXPECT_EQ(html.find("<!--"), std::string::npos);
  EXPECT_EQ(html.find("\"q\" 'q'"), std::string::npos);
  EXPECT_NE(html.find("a&lt;script&gt;x()&lt;/script&gt; &quot;q&quot; &#39;q&#39; &lt;/textarea&gt; &lt;!-- \nline two größe ✓ 日本"),
            std::string::npos);

  // The chart data: no '<' at all inside the block, and it reads back to the exact names.
  const std::string open = "<script type=\"application/json\" id=\"fb-data\">";
  const size_t begin = html.find(open) + open.size(), end = html.find("</script>", begin);
  const std::string block = html.substr(begin, end - begin);
  EXPECT_EQ(block.find('<'), std::string::npos);
  EXPECT_EQ(block.find("\xE2\x80\xA8"), std::string::npos);  // a line separator ends a JavaScript line
  const nlohmann::json data = nlohmann::json::parse(block);
  ASSERT_EQ(data["cases"].size(), 2u);
  EXPECT_EQ(data["cases"][0]["label"], evil + " b=1 fp32 none t=2");
  EXPECT_EQ(data["runs"][0][3], evil);
  EXPECT_EQ(data["cases"][0]["points"].size(), 3u);
}

TEST_F(ReportTest, ShowsAStoredPluginCostSplit) {
  ResultStore store(file("results.db"));
  int64_t run = store.begin_run(run_info("2024-05-01T12:00:00Z"));
  CaseResult r = make_case("plugin-seed", 1, "aggressive", 2.0, 5.0);
  fb::PluginCost c;
  c.with_ms = 7.126;
  c.without_ms = 6.910;
  c.difference_ms = 0.216;
  c.difference_ci_low = -0.034;
  c.difference_ci_high = 0.477;
  c.samples = 215;
  c.layer_runs = 50;
  c.stop_reason = "time-cap";
  c.plugin_ms = 0.004;
  c.plugin_layers = {{"copy_in_attention", "fusebench.plugin.Copy", 0.004}};
  fb::PreventedFusion f;
  f.name = "fusebench.Attention '<attn>' (12 nodes)";
  f.before = {{"attn", "fusebench.Attention", 0.399}};
  f.after = {{"MatMul_0", "MatMul", 0.2}, {"Softmax_0", "Softmax", 0.437}};
  f.before_ms = 0.399;
  f.after_ms = 0.637;
  c.prevented = {f};
  c.fusion_ms = 0.238;
  c.rest_ms = -0.041;
  c.unattributed_ms = 0.015;
  c.within_interval = true;
  r.plugin_cost = c;
  store.write_case(run, r);
  store.finish_run(run);
  const std::string html = fb::render_html_report(store);
  EXPECT_NE(html.find("<h4>Plugin cost</h4>\n<p>With the plugins 7.126 ms, without them 6.910 ms (timed interleaved, 215 "
                      "samples each, time-cap): difference <b>+0.216 ms</b> <span class=\"ci\">[-0.034, +0.477]</span>"),
            std::string::npos);
  EXPECT_NE(html.find("<td>(a) the plugins' own time</td><td class=\"num\">+0.004 ms</td><td>fusebench.plugin.Copy "
                      "<span class=\"mono\">copy_in_attention</span> 0.0040 ms</td>"),
            std::string::npos);
  EXPECT_NE(html.find("&nbsp;&nbsp;fusebench.Attention &#39;&lt;attn&gt;&#39; (12 nodes)</td><td class=\"num\">+0.238 ms</td>"
                      "<td>before 0.3990 ms in 1 layer(s)"),
            std::string::npos);
  EXPECT_NE(html.find("after 0.6370 ms in 2 layer(s)"), std::string::npos);
  EXPECT_NE(html.find("a + b + c lies within the difference's interval"), std::string::npos);
  EXPECT_EQ(html.find("<attn>"), std::string::npos);
}

// A dynamic case beside its static twin: the "Engine shapes" column gives its engine time
// against the twin's from the same run and its first run at a new shape. Without any
// dynamic case there is no such column.
TEST_F(ReportTest, ADynamicCaseIsComparedWithItsStaticTwin) {
  ResultStore store(file("results.db"));
  int64_t run = store.begin_run(run_info("2024-05-01T12:00:00Z"));
  store.write_case(run, make_case("shapes", 4, "aggressive", 10.0, 20.0));
  CaseResult dynamic = make_case("shapes", 4, "aggressive", 10.5, 20.0);
  dynamic.spec.engine_shapes = "dynamic";
  dynamic.spec.dynamic_batch = {1, 8, 16};
  dynamic.specialize_ms = 3.25;
  store.write_case(run, dynamic);
  CaseResult other_batch = make_case("shapes", 2, "aggressive", 4.0, 9.0);  // not its twin
  store.write_case(run, other_batch);
  store.finish_run(run);
  const std::string html = fb::render_html_report(store);
  EXPECT_NE(html.find("<th>Engine shapes</th>"), std::string::npos);
  EXPECT_NE(html.find("<td>dynamic 1..16 (opt 8); +5.0% vs static; new shape 3.250 ms</td>"), std::string::npos);
  EXPECT_NE(html.find("b=4 fp32 aggressive t=2 dynamic[1..16]"), std::string::npos);
  EXPECT_NE(html.find("first run at a new shape 3.250 ms"), std::string::npos);

  ResultStore plain(file("plain.db"));
  int64_t r2 = plain.begin_run(run_info("2024-05-01T12:00:00Z"));
  plain.write_case(r2, make_case("shapes", 4, "aggressive", 10.0, 20.0));
  plain.finish_run(r2);
  EXPECT_EQ(fb::render_html_report(plain).find("Engine shapes"), std::string::npos);
}

// Cases built without Winograd convolutions are their own batch curve, named so, not
// points mixed into the curve of the cases that allow them.
TEST_F(ReportTest, CasesWithoutWinogradAreTheirOwnCurve) {
  ResultStore store(file("results.db"));
  int64_t run = store.begin_run(run_info("2024-05-01T12:00:00Z"));
  for (bool winograd : {true, false})
    for (int64_t batch : {1, 4}) {
      CaseResult c = make_case("convs", batch, "aggressive", 2.0 * double(batch), 5.0 * double(batch));
      c.spec.winograd = winograd;
      store.write_case(run, c);
    }
  store.finish_run(run);
  const fb::ReportModel m = fb::build_report_model(store, {});
  ASSERT_EQ(m.batch_curves.size(), 2u);
  for (const fb::BatchCurve& c : m.batch_curves) {
    ASSERT_EQ(c.cases.size(), 2u);
    const bool winograd = m.cases[c.cases[0]].stored.result.spec.winograd;
    EXPECT_EQ(c.name, winograd ? "fp32 aggressive" : "fp32 aggressive no-winograd");
    for (size_t k : c.cases) EXPECT_EQ(m.cases[k].stored.result.spec.winograd, winograd);
  }
  const std::string html = fb::render_html_report(store);
  EXPECT_NE(html.find("fp32 aggressive no-winograd"), std::string::npos);
  EXPECT_NE(html.find("b=4 fp32 aggressive t=2 no-winograd"), std::string::npos);
}

// Cases that differ in a key setting the label does not show (a shape input's value) are
// curves of their own too, numbered apart; they once shared one curve.
TEST_F(ReportTest, CasesWithOtherShapeInputsAreTheirOwnCurve) {
  ResultStore store(file("results.db"));
  int64_t run = store.begin_run(run_info("2024-05-01T12:00:00Z"));
  for (int k : {2, 3})
    for (int64_t batch : {1, 4}) {
      CaseResult c = make_case("topk", batch, "aggressive", 2.0 * double(batch), 5.0 * double(batch));
      c.spec.shape_inputs["k"] = k;
      store.write_case(run, c);
    }
  store.finish_run(run);
  const fb::ReportModel m = fb::build_report_model(store, {});
  ASSERT_EQ(m.batch_curves.size(), 2u);
  EXPECT_EQ(m.batch_curves[0].name, "fp32 aggressive");
  EXPECT_EQ(m.batch_curves[1].name, "fp32 aggressive (2)");
  for (const fb::BatchCurve& c : m.batch_curves) {
    ASSERT_EQ(c.cases.size(), 2u);
    EXPECT_EQ(m.cases[c.cases[0]].stored.result.spec.shape_inputs, m.cases[c.cases[1]].stored.result.spec.shape_inputs);
  }
}

TEST(JsonForScript, EscapesWhatCouldCloseTheElement) {
  EXPECT_EQ(fb::json_for_script(nlohmann::json("</script><!--&\xE2\x80\xA9")),
            "\"\\u003c/script\\u003e\\u003c!--\\u0026\\u2029\"");
  EXPECT_EQ(fb::json_for_script(nlohmann::json("bad \xFF utf-8")), "\"bad \xEF\xBF\xBD utf-8\"");
}

namespace {

// `nights` runs of one case whose engine gets `step` slower from night `step_at` (0-based);
// 30 samples a side with a little spread, so compare and history have something to judge.
std::vector<int64_t> nightly(ResultStore& store, int nights, int step_at, double step,
                             const std::function<void(CaseResult&, bool after_step)>& decorate = nullptr) {
  std::vector<int64_t> runs;
  for (int n = 0; n < nights; ++n) {
    char day[32];
    std::snprintf(day, sizeof day, "2024-06-%02dT02:00:00Z", n + 1);
    fb::RunInfo info = run_info(day);
    info.git_commit = n < step_at ? "aaaaaaaaaaaa" : "bbbbbbbbbbbb";
    if (n >= step_at) info.library_versions["onednn"] = "3.1.1";
    const int64_t run = store.begin_run(info);
    const double engine = 2.0 * (n >= step_at ? 1 + step : 1.0) * (1 + 0.001 * (n % 3));
    CaseResult r = make_case("nightly", 1, "none", engine, 5.0);
    r.spec.gate.max_regression = 0.05;
    for (fb::Measurement* m : {&r.engine, &r.reference}) {
      const double median = m->stats.median;
      m->samples_ms.clear();
      for (int i = 0; i < 30; ++i) m->samples_ms.push_back(median * (1 + 0.002 * ((i * 7) % 11 - 5)));
      m->stats.n = 30;
    }
    r.speedup_ci_low = r.speedup * 0.99;
    r.speedup_ci_high = r.speedup * 1.01;
    if (decorate) decorate(r, n >= step_at);
    store.write_case(run, r);
    store.finish_run(run);
    runs.push_back(run);
  }
  return runs;
}

}  // namespace

TEST_F(ReportTest, RegressionAgainstTheBaselineWithItsChangePoint) {
  ResultStore store(file("results.db"));
  const std::vector<int64_t> runs = nightly(store, 12, 6, 0.10);
  const fb::ReportModel m = fb::build_report_model(store, {});
  EXPECT_EQ(m.run.id, runs.back());
  ASSERT_TRUE(m.baseline.has_value());
  EXPECT_EQ(m.baseline->id, runs[10]);
  // Night 11 against night 10: both after the step, so no regression; as compare judges it,
  // against the spread of the 10 nights before (the step among them), noisy, not unchanged...
  EXPECT_TRUE(m.regressions.empty());
  ASSERT_EQ(m.cases.size(), 1u);
  ASSERT_TRUE(m.cases[0].judgement.has_value());
  EXPECT_EQ(m.cases[0].judgement->verdict, fb::Verdict::kNoisy);
  EXPECT_EQ(m.cases[0].judgement->speedup.noise_source, "runs (10)");
  // ...but history finds where it began: night 7 (index 6), 10% up.
  const fb::CaseTrend& h = m.cases[0].history;
  ASSERT_EQ(h.points.size(), 12u);
  ASSERT_EQ(h.changes[size_t(fb::Metric::kEngine)].size(), 1u);
  EXPECT_EQ(h.changes[size_t(fb::Metric::kEngine)][0].index, 6u);
  EXPECT_NEAR(h.changes[size_t(fb::Metric::kEngine)][0].step, 0.10, 0.005);
  EXPECT_EQ(h.changes[size_t(fb::Metric::kReference)].size(), 0u);
  const std::string html = fb::render_html_report(m);
  EXPECT_NE(html.find("<li><b>engine</b> +10.0% from <a href=\"#run-" + std::to_string(runs[6]) + "\">run " +
                      std::to_string(runs[6]) + "</a> (commit <span class=\"mono\">bbbbbbbbbbbb</span>"),
            std::string::npos);
  EXPECT_NE(html.find("<tr id=\"run-" + std::to_string(runs[6]) + "\">"), std::string::npos);

  // Against the night before the step: a regression, with its noise and where it began.
  fb::ReportOptions o;
  o.baseline = runs[5];
  const fb::ReportModel vs = fb::build_report_model(store, o);
  ASSERT_EQ(vs.regressions.size(), 1u);
  EXPECT_NEAR(vs.cases[0].judgement->engine.change, 0.10, 0.005);
  const std::string page = fb::render_html_report(vs);
  EXPECT_NE(page.find("<div class=\"banner red\" id=\"banner\"><strong>Attention.</strong> 1 of 1 cases fail the gate; 1 slower than run " +
                      std::to_string(runs[5])),
            std::string::npos)
      << "the scenario's max_regression rule fails too";
  EXPECT_NE(page.find("<h3>Regressions <span class=\"muted\">(1)</span></h3>"), std::string::npos);
  EXPECT_NE(page.find("<b>+10.0% ±"), std::string::npos);
  // Without stored layer profiles there is no explanation, and the row says why.
  EXPECT_NE(page.find("no explanation: no layer profile stored on either side"), std::string::npos);
  EXPECT_EQ(page.find("<section id=\"explanations\">"), std::string::npos);
  EXPECT_NE(page.find("since <a href=\"#run-" + std::to_string(runs[6]) + "\">"), std::string::npos);
  // The fingerprint fields that moved with the step are marked.
  std::map<std::string, bool> differs;
  for (const fb::EnvField& f : vs.environment) differs[f.name] = f.differs;
  EXPECT_TRUE(differs.at("Git commit"));
  EXPECT_TRUE(differs.at("Library onednn"));
  EXPECT_FALSE(differs.at("Host"));
  EXPECT_FALSE(differs.at("Library sqlite"));
  EXPECT_NE(page.find("<tr class=\"diff\"><th>Library onednn</th>"), std::string::npos);

  // --last: the window ends at the run and holds at most N runs.
  o = {};
  o.last = 5;
  EXPECT_EQ(fb::build_report_model(store, o).history_runs.size(), 5u);
  o.run = runs[2];
  const fb::ReportModel early = fb::build_report_model(store, o);
  EXPECT_EQ(early.history_runs.size(), 3u);
  EXPECT_EQ(early.history_runs.back().id, runs[2]);
}

// The same nights with layer profiles: before the step one fused layer of /m/a/X and
// /m/a/Y (1.0 ms), after it the pass refuses and each runs alone (0.7 + 0.5 ms). The
// regression links to its explanation: that group first, the refusal under it, the module
// icicle of the change.
TEST_F(ReportTest, ARegressionLinksToItsExplanation) {
  ResultStore store(file("results.db"));
  const auto layer = [](int index, const std::string& name, std::vector<std::string> sources) {
    fb::LayerRecord l;
    l.index = index;
    l.name = name;
    l.kind = sources.size() > 1 ? "fusebench.Fused" : "Op";
    l.kernel = "k";
    l.precision = "fp32";
    l.sources = std::move(sources);
    return l;
  };
  const auto decorate = [&](CaseResult& r, bool after) {
    r.spec.profile_iterations = 3;
    r.layers.clear();
    fb::Profile& p = r.profile.emplace();
    p.iterations = 3;
    const auto add = [&](const fb::LayerRecord& l, double ms) {
      r.layers.push_back(l);
      p.layers.push_back({l.index, l.name, l.kind, l.kernel, ms, 0, 0, l.sources, "", {ms, ms * 1.01, ms * 0.99}});
      p.total_ms += ms;
      for (const std::string& s : l.sources) p.nodes.push_back({s, fb::module_of(s), l.index, ms / double(l.sources.size()), l.sources.size() > 1});
    };
    add(layer(0, "/m/in", {"/m/in"}), 0.25);
    if (after) {
      add(layer(1, "/m/a/X", {"/m/a/X"}), 0.7);
      add(layer(2, "/m/a/Y", {"/m/a/Y"}), 0.5);
      r.fusion_decisions = {{"xy-fusion", "/m/a/X", {"/m/a/X", "/m/a/Y"}, "", "node '/m/a/Y' <is> excluded"}};
    } else {
      add(layer(1, "/m/a/X + Y", {"/m/a/X", "/m/a/Y"}), 1.0);
      r.fusion_decisions = {{"xy-fusion", "/m/a/X", {"/m/a/X", "/m/a/Y"}, "/m/a/X + Y", ""}};
    }
    p.modules = fb::roll_up_modules(p.nodes, p.total_ms);
  };
  const std::vector<int64_t> runs = nightly(store, 12, 6, 0.10, decorate);
  fb::ReportOptions o;
  o.baseline = runs[5];
  const fb::ReportModel m = fb::build_report_model(store, o);
  ASSERT_EQ(m.regressions.size(), 1u);
  const fb::ReportCase& c = m.cases[m.regressions[0]];
  ASSERT_TRUE(c.explanation.has_value()) << c.explanation_note;
  const fb::RegionChange& first = c.explanation->regions.front();
  EXPECT_EQ(first.module, "/m/a/");
  EXPECT_EQ(first.shape, "split");
  EXPECT_NEAR(first.time.delta_ms(), 0.2, 1e-12);
  ASSERT_EQ(first.decisions.size(), 1u);
  EXPECT_EQ(first.decisions[0].baseline, "fused 2 nodes into '/m/a/X + Y'");
  EXPECT_EQ(first.decisions[0].candidate, "refused: node '/m/a/Y' <is> excluded");
  EXPECT_NEAR(c.explanation->profiled.delta_ms(), 0.2, 1e-12);
  const std::string page = fb::render_html_report(m);
  EXPECT_NE(page.find("<a href=\"#explain-0\">explanation</a>: first /m/a/ (2 nodes) (split, +0.2000 ms); xy-fusion at "
                      "<span class=\"mono\">/m/a/X</span>"),
            std::string::npos);
  const size_t section = page.find("<section id=\"explanations\">");
  ASSERT_NE(section, std::string::npos);
  const size_t div = page.find("<div class=\"explanation\" id=\"explain-0\">", section);
  ASSERT_NE(div, std::string::npos);
  EXPECT_NE(page.find("aria-label=\"the change of time per module, as an icicle", div), std::string::npos);
  EXPECT_NE(page.find("<title>/m/a/: 1.0000 → 1.2000 ms, +0.2000 ms [", div), std::string::npos);
  EXPECT_NE(page.find("refused: node &#39;/m/a/Y&#39; &lt;is&gt; excluded", div), std::string::npos);
  EXPECT_EQ(page.find("<is>"), std::string::npos);  // names from the database stay text
}

TEST_F(ReportTest, AGreenPageNeedsABaselineAndNoNoise) {
  ResultStore store(file("results.db"));
  nightly(store, 2, 5, 0);
  std::string html = fb::render_html_report(store);
  EXPECT_NE(html.find("<div class=\"banner green\" id=\"banner\"><strong>All clear.</strong>"), std::string::npos);
  // The first run alone has nothing to compare with: grey, not green.
  html = fb::render_html_report(store, store.list_runs().front().id);
  EXPECT_NE(html.find("<div class=\"banner grey\" id=\"banner\"><strong>Gate passed, no baseline.</strong>"),
            std::string::npos);
}

TEST_F(ReportTest, EngineViewReadsTheMatchingStoredProfiles) {
  ResultStore store(file("results.db"));
  nightly(store, 2, 5, 0);
  // Profiles are matched by model content, precision, device, batch, fusion, threads and
  // limits, and time: a profile
  // belongs to the last run begun before it. Both are stamped now, after both runs began,
  // so the newest one serves the latest run; the baseline (run 1) has none of its own.
  // The older profile's config is as `fusebench profile` wrote it before it wrote the
  // BuildConfig JSON ("exclude_ops"); the newer one's is the BuildConfig JSON.
  const auto profile = [&](double ms, const std::string& config) {
    fb::StoredProfile p;
    p.model = "zoo:bert";
    p.model_hash = "abc123";
    p.config_json = config;
    p.peaks = {100, 50};
    p.profile.iterations = 10;
    p.profile.total_ms = ms;
    p.profile.layers.push_back({0, "fused_matmul_0", "fusebench.FusedMatMul", "onednn.matmul", ms, 2e6, 1e5,
                                {"/layer.0/MatMul", "/layer.0/Add"}});
    p.profile.nodes = {{"/layer.0/MatMul", "/layer.0/", 0, ms * 0.9, true}, {"/layer.0/Add", "/layer.0/", 0, ms * 0.1, true}};
    return store.write_profile(p);
  };
  profile(0.5, R"({"fusion":"none","batch":1,"threads":2,"exclude_nodes":[],"exclude_ops":[],"partition_points":[]})");
  fb::BuildConfig built;
  built.fusion = fb::FusionLevel::None;
  built.threads = 2;
  const int64_t newest = profile(0.4, fb::build_config_to_json(built).dump());
  built.exclude_op_types = {"Softmax"};  // a limit the case does not have: not its profile
  profile(0.3, fb::build_config_to_json(built).dump());
  built.exclude_op_types = {};
  built.precision = fb::Precision::BF16;  // another precision (the case's is fp32): not its profile
  profile(0.2, fb::build_config_to_json(built).dump());
  built.precision = fb::Precision::FP32;
  built.device = "cuda";  // another device: not its profile
  profile(0.1, fb::build_config_to_json(built).dump());
  const fb::ReportModel m = fb::build_report_model(store, {});
  const fb::EngineView& v = m.cases[0].engine;
  ASSERT_TRUE(v.profile.has_value());
  EXPECT_EQ(v.profile->id, newest);
  EXPECT_FALSE(v.baseline_profile.has_value());
  ASSERT_EQ(v.layers.size(), 1u);
  EXPECT_TRUE(v.layers[0].profiled);
  EXPECT_EQ(v.layers[0].kernel, "onednn.matmul");
  EXPECT_DOUBLE_EQ(v.layers[0].ms, 0.4);
  EXPECT_DOUBLE_EQ(v.layers[0].share, 1.0);
  EXPECT_DOUBLE_EQ(v.layers[0].gflops, 5.0);  // 2e6 flops in 0.4 ms
  EXPECT_DOUBLE_EQ(v.layers[0].peak_share, 0.05);
  ASSERT_EQ(v.modules.size(), 2u);  // "/" and "/layer.0/"
  EXPECT_EQ(v.modules[1].module, "/layer.0/");
  EXPECT_TRUE(v.modules[1].estimated);
  const std::string html = fb::render_html_report(m);
  EXPECT_NE(html.find("Layer times from stored profile " + std::to_string(newest)), std::string::npos);
  EXPECT_NE(html.find("aria-label=\"time per module"), std::string::npos);
}

TEST(PassSummaries, ReadTheBuildLogsAfterLines) {
  const auto p = fb::pass_summaries(
      "imported: 9 nodes\nafter identity_elimination: 8 layers (1 rewrites)\nafter gelu_fusion: 5 layers (3 rewrites)\n"
      "after fusion: 5 layers from 9 ONNX nodes\nlayer 0: x");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[1].pass, "gelu_fusion");
  EXPECT_EQ(p[1].layers_after, 5);
  EXPECT_EQ(p[1].rewrites, 3);
}

TEST_F(ReportTest, ReportsAChosenRun) {
  ResultStore store(file("results.db"));
  int64_t first = fill(store);
  int64_t second = store.begin_run(run_info("2024-05-02T12:00:00Z"));
  store.write_case(second, make_case("later", 2, "none", 1.0, 1.25));

  const std::string latest = fb::render_html_report(store);
  EXPECT_NE(latest.find("Scenario later"), std::string::npos);
  EXPECT_NE(latest.find("1.25×"), std::string::npos);
  EXPECT_NE(latest.find("not finished"), std::string::npos);
  EXPECT_EQ(latest.find("bert-fusion"), std::string::npos);

  const std::string chosen = fb::render_html_report(store, first);
  EXPECT_NE(chosen.find("Scenario bert-fusion"), std::string::npos);
  EXPECT_EQ(chosen.find("Scenario later"), std::string::npos);

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

namespace {

// A result timed in 5 worker processes of 6 samples each: process p's engine median is
// `engine_ms` * (1 + 0.002 (p - 2)) and its reference median `reference_ms` * (1 + 0.002
// ((3p mod 5) - 2)), so compare reads a spread of a few tenths of a percent between processes
// in each figure, the speedup included.
CaseResult five_process_case(const std::string& scenario, int64_t batch, double engine_ms, double reference_ms) {
  CaseResult r = make_case(scenario, batch, "standard", engine_ms, reference_ms);
  for (fb::Measurement* m : {&r.engine, &r.reference}) {
    const double median = m->stats.median;
    m->samples_ms.clear();
    m->sample_process.clear();
    for (int p = 0; p < 5; ++p)
      for (int i = 0; i < 6; ++i) {
        const int shift = m == &r.engine ? p - 2 : (3 * p) % 5 - 2;
        m->samples_ms.push_back(median * (1 + 0.002 * shift) * (1 + 0.001 * (i - 2)));
        m->sample_process.push_back(p);
      }
    m->stats.n = 30;
  }
  r.spec.timing.processes = 5;
  r.speedup_ci_low = r.speedup * 0.99;
  r.speedup_ci_high = r.speedup * 1.01;
  return r;
}

// Five nights of two cases, each with max_regression 5%. "steady": speedup 2.50x every
// night, then the engine 10% slower on the last. "jumpy": its speedup wanders by about 8%
// from night to night (within each night the processes agree closely), then the same 10%:
// between processes alone that is a regression; against the earlier nights it is noise.
void steady_and_jumpy(ResultStore& store) {
  const double jumpy_reference[] = {5.0, 4.6, 5.4, 5.0, 5.0};
  for (int n = 0; n < 5; ++n) {
    const int64_t run = store.begin_run(run_info("2024-07-0" + std::to_string(n + 1) + "T02:00:00Z"));
    const double step = n == 4 ? 1.10 : 1.0;
    for (CaseResult r : {five_process_case("steady", 1, 2.0 * step, 5.0),
                         five_process_case("jumpy", 2, 2.0 * step, jumpy_reference[n])}) {
      r.spec.gate.max_regression = 0.05;
      store.write_case(run, r);
    }
    store.finish_run(run);
  }
}

// What `fusebench compare` printed for the case whose line ends in "[KEY]": the verdict,
// the speedup's and the engine's change with their noise ("-9.1% ±0.7%"), and the second
// line up to where the machine's state begins (the reason and where the noise came from).
struct PrintedVerdict {
  std::string verdict, speedup, engine, why;
};

PrintedVerdict printed_verdict(const std::string& output, const std::string& key) {
  PrintedVerdict v;
  const size_t end = output.find("[" + key + "]");
  if (end == std::string::npos) return v;
  const size_t begin = output.rfind('\n', end) + 1;
  const std::string line = output.substr(begin, end - begin);
  v.verdict = line.substr(0, line.find(' '));
  // Each change is "+N.N% ±N.N%" after a value ending in "x " or " ".
  std::vector<std::string> changes;
  for (size_t at = line.find(" ±"); at != std::string::npos && changes.size() < 2; at = line.find(" ±", at + 2)) {
    const size_t from = line.rfind(' ', at - 1) + 1, to = line.find(' ', at + 2);
    changes.push_back(line.substr(from, to - from));
  }
  if (changes.size() == 2) v.speedup = changes[0], v.engine = changes[1];
  const size_t next = output.find('\n', end) + 1;
  std::string second = output.substr(next, output.find('\n', next) - next);
  second = second.substr(second.find_first_not_of(' '));
  v.why = second.substr(0, second.find("; load "));
  return v;
}

// "+1.2%" or "-0.7%" as a fraction, and back as the report writes it.
double percent(const std::string& s) { return std::stod(s) / 100; }
std::string signed_percent(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", 100 * v);
  return buf;
}

}  // namespace

// The page and `fusebench compare` never disagree: for a stored baseline/candidate pair with
// earlier runs (compare's noise pools the processes with the runs: steady for one case,
// jumpy for the other), the report's verdicts, changes, noise, reasons and intervals
// are the ones compare prints.
TEST_F(ReportTest, VerdictsAreTheOnesComparePrints) {
  const std::string db = file("results.db");
  ResultStore store(db);
  steady_and_jumpy(store);
  const fb::ReportModel m = fb::build_report_model(store, {});
  ASSERT_EQ(m.cases.size(), 2u);
  ASSERT_TRUE(m.cases[0].judgement && m.cases[1].judgement);
  EXPECT_EQ(m.cases[0].judgement->verdict, fb::Verdict::kSlower);
  EXPECT_EQ(m.cases[0].judgement->speedup.noise_source, "processes (5+5) and runs (4)");
  EXPECT_EQ(m.cases[1].judgement->verdict, fb::Verdict::kNoisy);
  EXPECT_EQ(m.cases[1].judgement->speedup.noise_source, "processes (5+5) and runs (4)");
  EXPECT_EQ(m.regressions, std::vector<size_t>{0});
  EXPECT_EQ(m.noisy, std::vector<size_t>{1});

  // The same judgement as the harness's compare path (the baseline's history, same machine).
  const fb::JudgementContext context = fb::judgement_context(store, m.run.id, store, m.baseline->id);
  const std::vector<fb::CaseComparison> direct =
      fb::compare_runs(store.load_cases(m.baseline->id), store.load_cases(m.run.id), {}, &context.history, true);
  ASSERT_EQ(direct.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const fb::CaseJudgement& a = *m.cases[i].judgement;
    const fb::CaseJudgement& b = *direct[i].judgement;
    EXPECT_EQ(a.verdict, b.verdict);
    EXPECT_EQ(a.reason, b.reason);
    EXPECT_EQ(a.speedup.change_ci.low, b.speedup.change_ci.low);
    EXPECT_EQ(a.speedup.change_ci.high, b.speedup.change_ci.high);
    EXPECT_EQ(a.engine.change_ci.low, b.engine.change_ci.low);
    EXPECT_EQ(a.engine.change_ci.high, b.engine.change_ci.high);
  }

  // And as the binary prints it.
  const std::string out = file("compare.txt");
  ASSERT_EQ(std::system((std::string(FUSEBENCH_BINARY) + " compare --db " + db + " > " + out + " 2>&1").c_str()), 0);
  std::ifstream f(out);
  const std::string printed((std::istreambuf_iterator<char>(f)), {});
  const std::string html = fb::render_html_report(m);
  for (size_t i = 0; i < 2; ++i) {
    const PrintedVerdict p = printed_verdict(printed, m.cases[i].key);
    ASSERT_FALSE(p.speedup.empty()) << printed;
    const fb::CaseJudgement& j = *m.cases[i].judgement;
    EXPECT_EQ(p.verdict, fb::verdict_name(j.verdict));
    EXPECT_EQ(p.speedup, fb::change_text(j.speedup));
    EXPECT_EQ(p.engine, fb::change_text(j.engine));
    EXPECT_EQ(p.why, j.reason + "; noise from " + j.speedup.noise_source);
    // The page's row for the case, in the verdicts section: the printed verdict, changes
    // and reason, and the interval the printed change and noise span (to their rounding).
    const std::string link = "<td><a class=\"wrap\" href=\"#case-" + std::to_string(i) + "\">";
    const size_t row = html.find(link, html.find(i == 0 ? "<h3>Regressions" : "<h3>Noisy cases"));
    ASSERT_NE(row, std::string::npos);
    // A regression takes two rows (figures, then why), a noisy case one.
    const size_t row_end = html.find("</tr>", row);
    const std::string tr = html.substr(row, (i == 0 ? html.find("</tr>", row_end + 5) : row_end) - row);
    EXPECT_NE(tr.find("<span class=\"badge " + p.verdict + "\">" + p.verdict + "</span>"), std::string::npos) << tr;
    EXPECT_NE(tr.find("<b>" + p.speedup + "</b>"), std::string::npos) << tr;
    EXPECT_NE(tr.find(p.why), std::string::npos) << tr;
    if (i == 0) {  // the noisy table shows the speedup only
      EXPECT_NE(tr.find("<b>" + p.engine + "</b>"), std::string::npos) << tr;
    }
    const std::string speedup_ci =
        "[" + signed_percent(j.speedup.change_ci.low) + ", " + signed_percent(j.speedup.change_ci.high) + "]";
    EXPECT_NE(tr.find(speedup_ci), std::string::npos) << tr;
    const double change = percent(p.speedup.substr(0, p.speedup.find(' ')));
    const double noise = percent(p.speedup.substr(p.speedup.find("±") + 2));
    // Rounding each printed figure to 0.1% moves the interval's ends by at most about 0.2%.
    EXPECT_NEAR(j.speedup.change_ci.low, (1 + change) / (1 + noise) - 1, 0.002);
    EXPECT_NEAR(j.speedup.change_ci.high, (1 + change) * (1 + noise) - 1, 0.002);
  }
}

// JUnit and export render the run as the report's model holds it: `fusebench gate --junit`
// writes exactly the JUnit of the model's gate verdicts (the same baseline, history and
// machine rule: "steady" fails max_regression, "jumpy" is inconclusive, as compare calls it
// noisy), and export's rows are the model's cases, keyed and ordered alike.
TEST_F(ReportTest, JUnitAndExportAgreeWithTheReportModel) {
  const std::string db = file("results.db");
  {
    ResultStore writer(db);
    steady_and_jumpy(writer);
  }
  const ResultStore store(db);
  const fb::ReportModel m = fb::build_report_model(store, {});
  ASSERT_EQ(m.gate.cases.size(), 2u);
  EXPECT_EQ(m.gate.cases[0].outcome, fb::Outcome::kFail);
  EXPECT_EQ(m.gate.cases[1].outcome, fb::Outcome::kInconclusive);

  const std::string xml = file("gate.xml");
  const int status = std::system((std::string(FUSEBENCH_BINARY) + " gate --db " + db + " --junit " + xml + " > " +
                                  file("gate.txt") + " 2>&1").c_str());
  EXPECT_EQ(WEXITSTATUS(status), 1);  // a case fails
  std::ifstream f(xml);
  const std::string written((std::istreambuf_iterator<char>(f)), {});
  EXPECT_EQ(written, fb::render_junit(m.gate));

  std::ostringstream csv;
  fb::export_runs(store, {m.run.id}, fb::ExportFormat::kCsv, csv);
  std::istringstream lines(csv.str());
  std::string line;
  std::getline(lines, line);  // header
  for (const fb::ReportCase& c : m.cases)
    for (const char* executor : {"engine", "reference"}) {
      ASSERT_TRUE(std::getline(lines, line));
      EXPECT_EQ(line.rfind(std::to_string(m.run.id) + "," + m.run.info.started_at + "," + c.key + "," +
                               c.stored.result.spec.scenario + ",", 0), 0u) << line;
      EXPECT_NE(line.find("," + std::string(executor) + ","), std::string::npos) << line;
    }
  EXPECT_FALSE(std::getline(lines, line));
}

// The icicle marks a module whose time was apportioned from fused layers "est." (a star
// read as a glob in a module path), hatched; a measured one is plain.
TEST(Icicle, MarksEstimatedModulesEst) {
  const std::vector<fb::ModuleProfile> modules = {{"/encoder/", 1.0, 1.0, true}, {"/encoder/layer.0/", 0.4, 0.4, false}};
  const std::string svg = fb::svg::icicle(modules, 1.0);
  EXPECT_NE(svg.find(">encoder/ 100.0% est.</text>"), std::string::npos) << svg;
  EXPECT_NE(svg.find(">layer.0/ 40.0%</text>"), std::string::npos) << svg;
  EXPECT_EQ(svg.find('*'), std::string::npos) << svg;
  EXPECT_EQ(count(svg, "fill=\"url(#hatch)\""), 1u) << svg;
}
