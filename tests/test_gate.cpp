// gate: each rule (status, accuracy, min speedup, max regression, max abs err) on synthetic
// cases, the noisy → inconclusive rule, command-line rules replacing the scenario's, the exit
// codes, JUnit XML, and `fusebench gate` end to end on a stored run.
#include "harness/judge/gate.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/stats/random.h"
#include "harness/stats/statistics.h"
#include "reports/junit.h"

namespace fs = std::filesystem;

namespace {

std::vector<double> samples(uint64_t seed, double mean, double cv, size_t n = 60) {
  fb::Rng rng(seed);
  std::vector<double> x(n);
  for (double& v : x) v = mean * (1 + cv * rng.normal());
  return x;
}

// A case with engine and reference samples around the given medians; the speedup and its
// interval come from them as the timer computes them.
fb::StoredCase make_case(int64_t batch, double engine_ms, double reference_ms, uint64_t seed, double cv = 0.01) {
  fb::StoredCase sc;
  sc.run_id = 2;
  fb::CaseResult& r = sc.result;
  r.spec.scenario = "gated";
  r.spec.model_hash = "feed";
  r.spec.batch = batch;
  r.engine.samples_ms = samples(seed, engine_ms, cv);
  r.reference.samples_ms = samples(seed + 1000, reference_ms, cv);
  r.engine.stats = fb::compute_stats(r.engine.samples_ms);
  r.reference.stats = fb::compute_stats(r.reference.samples_ms);
  r.speedup = r.reference.stats.median / r.engine.stats.median;
  fb::Interval ci = fb::bootstrap_ratio_ci(r.reference.samples_ms, r.engine.samples_ms);
  r.speedup_ci_low = ci.low;
  r.speedup_ci_high = ci.high;
  r.accuracy.max_abs_err = 1e-6;
  r.stop_reason = "converged";
  return sc;
}

const fb::RuleResult* rule(const fb::CaseVerdict& v, const std::string& name) {
  for (const fb::RuleResult& r : v.rules)
    if (r.rule == name) return &r;
  return nullptr;
}

TEST(Gate, PassesWhenNoRuleIsSetAndEveryCaseRan) {
  std::vector<fb::StoredCase> cases{make_case(1, 1.0, 2.0, 1), make_case(8, 4.0, 6.0, 2)};
  fb::GateReport r = fb::evaluate_gate(cases, {}, nullptr);
  EXPECT_EQ(r.outcome, fb::Outcome::kPass);
  EXPECT_EQ(r.passed, 2);
  EXPECT_EQ(r.run_id, 2);
  EXPECT_EQ(fb::exit_code_of(r.outcome), 0);
}

TEST(Gate, MinSpeedupFromTheScenarioOrTheCommandLine) {
  std::vector<fb::StoredCase> cases{make_case(1, 1.0, 2.0, 1), make_case(8, 4.0, 5.0, 2)};  // 2.0x and 1.25x
  for (auto& c : cases) c.result.spec.gate.min_speedup = 1.5;
  fb::GateReport r = fb::evaluate_gate(cases, {}, nullptr);
  EXPECT_EQ(r.outcome, fb::Outcome::kFail);
  EXPECT_EQ(r.cases[0].outcome, fb::Outcome::kPass);
  EXPECT_EQ(r.cases[1].outcome, fb::Outcome::kFail);
  ASSERT_NE(rule(r.cases[1], "min_speedup"), nullptr);
  EXPECT_NE(rule(r.cases[1], "min_speedup")->detail.find("vs min 1.50x"), std::string::npos);
  EXPECT_EQ(fb::exit_code_of(r.outcome), 1);

  // The command line replaces the scenario's rule for every case.
  fb::GateRules cli;
  cli.min_speedup = 1.1;
  EXPECT_EQ(fb::evaluate_gate(cases, cli, nullptr).outcome, fb::Outcome::kPass);
}

TEST(Gate, ANoisyCaseIsInconclusiveOnlyWhereItsIntervalStraddlesTheRule) {
  // CV 20% with 60 samples: the speedup interval is wide (about ±10%).
  fb::StoredCase c = make_case(1, 1.0, 1.5, 7, 0.2);
  c.result.noisy = true;
  c.result.stop_reason = "time-cap";
  ASSERT_LT(c.result.speedup_ci_low, 1.5);
  ASSERT_GT(c.result.speedup_ci_high, 1.5);
  fb::GateRules cli;
  cli.min_speedup = 1.5;
  fb::GateReport r = fb::evaluate_gate({c}, cli, nullptr);
  EXPECT_EQ(r.outcome, fb::Outcome::kInconclusive);
  EXPECT_EQ(r.inconclusive, 1);
  EXPECT_EQ(fb::exit_code_of(r.outcome), 3);
  EXPECT_NE(r.cases[0].rules[0].detail.find("noisy case (time-cap"), std::string::npos) << r.cases[0].rules[0].detail;
  // Far from the threshold the noisy case is still judged: its whole interval is above 1.1,
  // and below 2.5.
  cli.min_speedup = 1.1;
  EXPECT_EQ(fb::evaluate_gate({c}, cli, nullptr).outcome, fb::Outcome::kPass);
  cli.min_speedup = 2.5;
  EXPECT_EQ(fb::evaluate_gate({c}, cli, nullptr).outcome, fb::Outcome::kFail);
  // Without the noisy flag an interval that straddles the minimum is just as undecided:
  // the median alone above it (or below) is not a verdict.
  c.result.noisy = false;
  cli.min_speedup = c.result.speedup * 0.99;
  EXPECT_EQ(fb::evaluate_gate({c}, cli, nullptr).outcome, fb::Outcome::kInconclusive);
  cli.min_speedup = c.result.speedup * 1.01;
  EXPECT_EQ(fb::evaluate_gate({c}, cli, nullptr).outcome, fb::Outcome::kInconclusive);
  // A failure anywhere outranks an inconclusive elsewhere.
  fb::StoredCase noisy = make_case(1, 1.0, 1.5, 7, 0.2);
  noisy.result.noisy = true;
  fb::StoredCase slow = make_case(2, 1.0, 1.0, 8);
  cli.min_speedup = 1.5;
  EXPECT_EQ(fb::evaluate_gate({noisy, slow}, cli, nullptr).outcome, fb::Outcome::kFail);
}

TEST(Gate, MaxRegressionAgainstABaseline) {
  std::vector<fb::StoredCase> base{make_case(1, 1.0, 2.0, 1), make_case(8, 4.0, 8.0, 2)};
  std::vector<fb::StoredCase> now{make_case(1, 1.10, 2.0, 3), make_case(8, 4.04, 8.0, 4), make_case(16, 9, 18, 5)};
  fb::GateRules cli;
  cli.max_regression = 0.05;
  fb::GateReport r = fb::evaluate_gate(now, cli, &base);
  EXPECT_EQ(r.cases[0].outcome, fb::Outcome::kFail);  // +10%
  EXPECT_NE(rule(r.cases[0], "max_regression")->detail.find("slower"), std::string::npos);
  EXPECT_EQ(r.cases[1].outcome, fb::Outcome::kPass);  // +1%
  EXPECT_EQ(r.cases[2].outcome, fb::Outcome::kPass);  // new: not judged
  EXPECT_EQ(rule(r.cases[2], "max_regression")->detail, "no baseline for this case (new): not judged");
  EXPECT_EQ(r.outcome, fb::Outcome::kFail);
  // Within the allowance: a 10% regression passes a 15% limit.
  cli.max_regression = 0.15;
  EXPECT_EQ(fb::evaluate_gate(now, cli, &base).outcome, fb::Outcome::kPass);
  // Without a baseline the rule is reported, not judged.
  EXPECT_EQ(fb::evaluate_gate(now, cli, nullptr).cases[0].rules[0].detail, "no baseline run: not judged");
}

TEST(Gate, ErrorsAccuracyAndMaxAbsErr) {
  fb::StoredCase err = make_case(1, 1.0, 2.0, 1);
  err.result.status = fb::CaseStatus::kError;
  err.result.error = "node 'n1' (Foo): unsupported op";
  fb::StoredCase inaccurate = make_case(2, 1.0, 2.0, 2);
  inaccurate.result.status = fb::CaseStatus::kFailed;
  inaccurate.result.accuracy.detail = "output 'y' [3]: 0.5 vs 0.0";
  fb::StoredCase err_1e3 = make_case(4, 1.0, 2.0, 3);
  err_1e3.result.accuracy.max_abs_err = 1e-3;
  err_1e3.result.spec.gate.max_abs_err = 1e-4;
  fb::StoredCase nan_err = make_case(8, 1.0, 2.0, 4);
  nan_err.result.accuracy.max_abs_err = NAN;
  nan_err.result.spec.gate.max_abs_err = 1e-4;
  fb::GateReport r = fb::evaluate_gate({err, inaccurate, err_1e3, nan_err}, {}, nullptr);
  ASSERT_EQ(r.cases.size(), 4u);
  EXPECT_EQ(r.failed, 4);
  EXPECT_EQ(r.cases[0].rules[0].detail, "error: node 'n1' (Foo): unsupported op");
  EXPECT_EQ(r.cases[1].rules[0].detail, "accuracy outside the tolerance: output 'y' [3]: 0.5 vs 0.0");
  EXPECT_EQ(rule(r.cases[2], "max_abs_err")->detail, "max abs err 0.001 vs max 0.0001");
  EXPECT_EQ(rule(r.cases[3], "max_abs_err")->outcome, fb::Outcome::kFail);  // NaN never passes
}

TEST(Junit, NamesEveryCaseAndTheFailingRule) {
  fb::StoredCase ok = make_case(1, 1.0, 2.0, 1);
  fb::StoredCase slow = make_case(8, 1.0, 1.1, 2);
  slow.result.spec.scenario = "a<b>&\"c\"";
  fb::StoredCase noisy = make_case(4, 1.0, 1.5, 7, 0.2);
  noisy.result.noisy = true;
  fb::StoredCase err = make_case(2, 1.0, 2.0, 3);
  err.result.status = fb::CaseStatus::kError;
  err.result.error = "bad \x01 input";
  fb::GateRules cli;
  cli.min_speedup = 1.5;
  const std::string xml = fb::render_junit(fb::evaluate_gate({ok, slow, noisy, err}, cli, nullptr));
  EXPECT_NE(xml.find("<testsuites name=\"fusebench gate (run 2)\" tests=\"4\" failures=\"1\" errors=\"1\" skipped=\"1\">"),
            std::string::npos)
      << xml;
  EXPECT_NE(xml.find("classname=\"fusebench.a&lt;b&gt;&amp;&quot;c&quot;\""), std::string::npos) << xml;
  EXPECT_NE(xml.find("<failure message=\"min_speedup: speedup 1.10x"), std::string::npos) << xml;
  EXPECT_NE(xml.find("<skipped message=\"min_speedup: "), std::string::npos) << xml;
  EXPECT_NE(xml.find("<error message=\"status: error: bad  input\""), std::string::npos) << xml;  // control char dropped
  EXPECT_EQ(fb::xml_escape("it's <ok> & \"fine\""), "it&apos;s &lt;ok&gt; &amp; &quot;fine&quot;");
}

// ---- the command, end to end ----

int run_command(const std::string& cmd, std::string* out) {
  const std::string path = fs::temp_directory_path() / ("fusebench_gate_out_" + std::to_string(getpid()));
  const int status = std::system((cmd + " > " + path + " 2>&1").c_str());
  std::ifstream f(path);
  out->assign(std::istreambuf_iterator<char>(f), {});
  fs::remove(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

TEST(GateCommand, ExitCodesAndJunitOnARealRun) {
  const fs::path dir = fs::temp_directory_path() / ("fusebench_gate_cmd_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "r.db").string(), scenario = (dir / "tiny.json").string();
  std::ofstream(scenario) << R"({"name": "tiny", "model": "zoo:mlp?in=32&hidden=32&layers=1",
    "matrix": {"fusion": ["none", "standard"]},
    "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 10, "max_iterations": 20, "max_seconds": 0.2,
               "disturbance_cpus": 64},
    "gate": {"max_abs_err": 1e-3}})";
  const std::string bin = FUSEBENCH_BINARY;
  std::string out;
  ASSERT_EQ(run_command(bin + " run " + scenario + " --db " + db, &out), 0) << out;
  // No timing rule: accuracy only (from the stored gate block), which passes.
  EXPECT_EQ(run_command(bin + " gate --db " + db + " --junit " + (dir / "j.xml").string(), &out), 0) << out;
  EXPECT_NE(out.find("2 of 2 cases pass"), std::string::npos) << out;
  EXPECT_NE(out.find("max abs err from the scenario"), std::string::npos) << out;
  EXPECT_TRUE(fs::exists(dir / "j.xml"));
  // An impossible speedup fails, naming the case (or, on a noisy case, is inconclusive).
  const int rc = run_command(bin + " gate --db " + db + " --min-speedup 1000", &out);
  EXPECT_TRUE(rc == 1 || rc == 3) << out;
  EXPECT_NE(out.find("tiny b=1 fp32 none t=1"), std::string::npos) << out;
  // Bad input is exit 2, naming the problem.
  EXPECT_EQ(run_command(bin + " gate --db " + (dir / "missing.db").string(), &out), 2);
  EXPECT_NE(out.find("missing.db: no such results database"), std::string::npos) << out;
  EXPECT_EQ(run_command(bin + " gate --db " + db + " --run 99", &out), 2);
  EXPECT_NE(out.find("run 99 is not in"), std::string::npos) << out;
  fs::remove_all(dir);
}

// A speedup of 1.0971 [1.09, 1.11] against 1.10: two decimals would print "1.10x [1.09x,
// 1.11x] vs min 1.10x" and FAIL on a value that reads as the minimum. The interval straddles
// it, so the verdict is INCONCLUSIVE, with the decimals that show which side the median is on.
TEST(Gate, AnIntervalAcrossTheMinimumIsInconclusiveAndPrintedWithEnoughDigits) {
  fb::StoredCase c = make_case(1, 1.0, 1.0971, 7);
  c.result.speedup = 1.0971;
  c.result.speedup_ci_low = 1.0903;
  c.result.speedup_ci_high = 1.1052;
  fb::GateRules cli;
  cli.min_speedup = 1.10;
  const fb::GateReport r = fb::evaluate_gate({c}, cli, nullptr);
  EXPECT_EQ(r.outcome, fb::Outcome::kInconclusive);
  EXPECT_EQ(fb::exit_code_of(r.outcome), 3);
  const std::string& detail = r.cases[0].rules[0].detail;
  EXPECT_NE(detail.find("speedup 1.097x [1.090x, 1.105x] vs min 1.100x"), std::string::npos) << detail;
  EXPECT_NE(detail.find("the interval straddles the minimum"), std::string::npos) << detail;
  // Wholly below: FAIL; wholly above: pass; an interval touching the minimum from above passes.
  c.result.speedup_ci_high = 1.0999;
  EXPECT_EQ(fb::evaluate_gate({c}, cli, nullptr).outcome, fb::Outcome::kFail);
  c.result.speedup = 1.12;
  c.result.speedup_ci_low = 1.10;
  c.result.speedup_ci_high = 1.14;
  EXPECT_EQ(fb::evaluate_gate({c}, cli, nullptr).outcome, fb::Outcome::kPass);
}

}  // namespace
