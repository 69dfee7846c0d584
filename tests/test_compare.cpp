// compare: a figure's change judged against its noise between processes (pooled robust
// spread, Student's t) and between earlier runs, the case verdict from speedup and engine time together
// (environment when both executors moved alike; speedup only across machines), matching by
// case key, and the A/A / A/B bars on seeded synthetic runs whose machine shifts between runs.
#include "harness/judge/compare.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "engine/ir/error.h"
#include "harness/judge/selfcheck.h"
#include "harness/measure/process_merge.h"
#include "harness/stats/random.h"
#include "harness/stats/statistics.h"

namespace {

using fb::Verdict;

fb::FigureValue figure(double value, std::vector<double> per_process) { return {value, std::move(per_process), {}}; }

std::vector<double> scaled(const std::vector<double>& v, double f) {
  std::vector<double> out;
  for (double x : v) out.push_back(x * f);
  return out;
}

const std::vector<double> kFive{1.00, 1.01, 0.99, 1.005, 0.995};

TEST(JudgeFigure, NoiseFromProcessesIsThePooledRobustSpreadWithStudentsT) {
  fb::CompareOptions o;
  const fb::FigureChange c = fb::judge_figure(figure(1.0, kFive), figure(1.05, scaled(kFive, 1.05)), {}, false, o);
  // The median absolute deviation of the logs is |log 0.995|, the same on both sides; the
  // figures are medians over 5 processes, sqrt(pi/2) times as uncertain as means.
  const double sd = 1.4826 * std::fabs(std::log(0.995));
  const double se = 1.2533 * sd * std::sqrt(1.0 / 5 + 1.0 / 5);
  EXPECT_NEAR(c.noise, se, 1e-12);
  EXPECT_NEAR(c.detectable, std::exp(fb::student_t_quantile(0.995, 8) * se) - 1, 1e-12);
  EXPECT_EQ(c.noise_source, "processes (5+5)");
  EXPECT_NEAR(c.change, 0.05, 1e-12);
  EXPECT_EQ(c.verdict, Verdict::kSlower);
  EXPECT_LT(c.change_ci.low, 0.05);
  EXPECT_GT(c.change_ci.high, 0.05);
  // The speedup: larger is better, so the same rise is "faster".
  EXPECT_EQ(fb::judge_figure(figure(1.0, kFive), figure(1.05, scaled(kFive, 1.05)), {}, true, o).verdict,
            Verdict::kFaster);
  // 0.5%: within the noise, and the noise would have shown 3%: unchanged.
  EXPECT_EQ(fb::judge_figure(figure(1.0, kFive), figure(1.005, scaled(kFive, 1.005)), {}, false, o).verdict,
            Verdict::kUnchanged);
}

// Paired: process k of each side ran next to each other, so a drift between the pairs (here
// the machine 30% slower for the later pairs) is in both sides of each pair and cancels. The
// unpaired judgement of the same values sees only their spread and cannot tell.
TEST(JudgeFigure, PairedJudgesTheAdjacentProcessesRatios) {
  fb::CompareOptions o;
  const std::vector<double> drifting{1.0, 1.1, 1.2, 1.3, 1.25, 1.05};
  std::vector<double> slowed = scaled(drifting, 1.05);
  slowed[2] *= 1.01;  // the pairs agree within about 1%
  slowed[4] /= 1.01;
  const fb::FigureChange c = fb::judge_paired_figure(figure(1.15, drifting), figure(1.2, slowed), false, o);
  EXPECT_NEAR(c.change, 0.05, 1e-12);  // the median pair ratio
  std::vector<double> ratios;
  for (size_t k = 0; k < drifting.size(); ++k) ratios.push_back(slowed[k] / drifting[k]);
  const double se = 1.2533 * fb::robust_log_spread(ratios) / std::sqrt(6.0);
  EXPECT_NEAR(c.noise, se, 1e-12);
  EXPECT_NEAR(c.detectable, std::exp(fb::student_t_quantile(0.995, 5) * se) - 1, 1e-12);
  EXPECT_EQ(c.noise_source, "paired processes (6)");
  EXPECT_EQ(c.verdict, Verdict::kSlower);
  EXPECT_EQ(fb::judge_figure(figure(1.15, drifting), figure(1.2, slowed), {}, false, o).verdict, Verdict::kNoisy);
  // Higher is better for the speedup; fewer than three pairs judge nothing.
  EXPECT_EQ(fb::judge_paired_figure(figure(1.15, drifting), figure(1.2, slowed), true, o).verdict, Verdict::kFaster);
  const fb::FigureChange two = fb::judge_paired_figure(figure(1, {1, 1.1}), figure(1.1, {1.1, 1.2}), false, o);
  EXPECT_EQ(two.verdict, Verdict::kNoisy);
  EXPECT_EQ(two.noise_source, "paired processes (2): too few pairs");
}

TEST(JudgeFigure, NoiseAboveTheChangeToDetectIsNoisy) {
  const std::vector<double> wide{1.0, 1.08, 0.93, 1.05, 0.96};
  fb::CompareOptions o;
  const fb::FigureChange c = fb::judge_figure(figure(1.0, wide), figure(1.02, scaled(wide, 1.02)), {}, false, o);
  EXPECT_GT(c.detectable, o.min_effect);
  EXPECT_EQ(c.verdict, Verdict::kNoisy);
  // Asked to detect 25%, the same data can say unchanged.
  o.min_effect = 0.25;
  EXPECT_EQ(fb::judge_figure(figure(1.0, wide), figure(1.02, scaled(wide, 1.02)), {}, false, o).verdict,
            Verdict::kUnchanged);
}

TEST(JudgeFigure, HistoryWidensTheNoiseWhenRunsMoveMoreThanProcesses) {
  fb::CompareOptions o;
  const std::vector<double> nights{1.0, 1.1, 0.92, 1.06, 0.97};
  const fb::FigureChange c = fb::judge_figure(figure(1.0, kFive), figure(1.05, scaled(kFive, 1.05)), nights, false, o);
  // Pooled with the processes by degrees of freedom (8 and 4), with t at 12.
  EXPECT_EQ(c.noise_source, "processes (5+5) and runs (5)");
  const double process_se = 1.2533 * 1.4826 * std::fabs(std::log(0.995)) * std::sqrt(0.4);
  const double runs_var = 2 * std::pow(fb::robust_log_spread(nights), 2);  // robust, as the processes' spread
  EXPECT_NEAR(c.noise, std::sqrt((8 * process_se * process_se + 4 * runs_var) / 12), 1e-12);
  EXPECT_NEAR(c.detectable, std::exp(fb::student_t_quantile(0.995, 12) * c.noise) - 1, 1e-12);
  EXPECT_EQ(c.verdict, Verdict::kNoisy);
  // Fewer than three earlier runs say nothing yet.
  EXPECT_EQ(fb::judge_figure(figure(1.0, kFive), figure(1.05, scaled(kFive, 1.05)), {1.0, 1.3}, false, o).noise_source,
            "processes (5+5)");
}

TEST(JudgeFigure, OneProcessFallsBackToTheSamplesInterval) {
  fb::CompareOptions o;
  fb::FigureValue base{1.0, {}, {0.99, 1.01}}, cand{1.1, {}, {1.09, 1.11}};
  const fb::FigureChange c = fb::judge_figure(base, cand, {}, false, o);
  EXPECT_EQ(c.noise_source, "samples (1 process)");
  EXPECT_EQ(c.verdict, Verdict::kSlower);
  EXPECT_EQ(fb::judge_figure({0, {}, {}}, cand, {}, false, o).verdict, Verdict::kNoisy);  // no value
  EXPECT_STREQ(fb::verdict_name(Verdict::kEnvironment), "environment");
}

// A case timed in `scales.size()` processes: process p runs both executors at scales[p]
// times their base times, and each executor further by its own `own_spread` (what a process
// does to one executor and not the other), with 1% scatter within the process.
fb::CaseResult timed(fb::Rng& rng, const std::vector<double>& scales, double engine_ms, double reference_ms,
                     double own_spread = 0) {
  constexpr double within = 0.01;
  fb::CaseResult r;
  r.spec.model_hash = "abc";
  r.stop_reason = "converged";
  for (size_t p = 0; p < scales.size(); ++p) {
    const double se = scales[p] * std::exp(own_spread * rng.normal());
    const double sr = scales[p] * std::exp(own_spread * rng.normal());
    for (int i = 0; i < 40; ++i) {
      r.engine.samples_ms.push_back(se * engine_ms * (1 + within * rng.normal()));
      r.reference.samples_ms.push_back(sr * reference_ms * (1 + within * rng.normal()));
      r.engine.sample_process.push_back(static_cast<int>(p));
      r.reference.sample_process.push_back(static_cast<int>(p));
    }
  }
  // What judge_case reads: the pooled medians and the speedup (the intervals only matter
  // with one process, which these cases never have).
  r.engine.stats.median = fb::percentile(r.engine.samples_ms, 0.5);
  r.reference.stats.median = fb::percentile(r.reference.samples_ms, 0.5);
  r.speedup = r.reference.stats.median / r.engine.stats.median;
  r.process_noise = fb::process_noise_of(r);
  return r;
}

std::vector<double> process_scales(fb::Rng& rng, int k, double spread) {
  std::vector<double> v;
  for (int i = 0; i < k; ++i) v.push_back(std::exp(spread * rng.normal()));
  return v;
}

TEST(JudgeCase, BothExecutorsMovingAlikeIsTheEnvironment) {
  fb::Rng rng(7);
  fb::CompareOptions o;
  const fb::CaseResult base = timed(rng, process_scales(rng, 5, 0.005), 1.0, 2.0);
  const fb::CaseResult busy = timed(rng, process_scales(rng, 5, 0.005), 1.3, 2.6);  // the machine slowed 30%
  const fb::CaseJudgement j = fb::judge_case(base, busy, nullptr, true, o);
  EXPECT_EQ(j.engine.verdict, Verdict::kSlower);
  EXPECT_EQ(j.speedup.verdict, Verdict::kUnchanged);
  EXPECT_EQ(j.verdict, Verdict::kEnvironment) << j.reason;
  // The engine alone 8% slower: the speedup falls, the case is slower.
  const fb::CaseResult slow = timed(rng, process_scales(rng, 5, 0.005), 1.08, 2.0);
  const fb::CaseJudgement s = fb::judge_case(base, slow, nullptr, true, o);
  EXPECT_EQ(s.verdict, Verdict::kSlower) << s.reason;
  EXPECT_EQ(s.speedup.verdict, Verdict::kSlower);
  EXPECT_EQ(s.engine.verdict, Verdict::kSlower);
  // On another machine only the speedup counts: the 30% shift is "unchanged".
  const fb::CaseJudgement x = fb::judge_case(base, busy, nullptr, false, o);
  EXPECT_TRUE(x.speedup_only);
  EXPECT_EQ(x.verdict, Verdict::kUnchanged) << x.reason;
  EXPECT_NE(x.reason.find("different machines: judged on speedup only"), std::string::npos) << x.reason;
  o.cross_host = true;
  EXPECT_EQ(fb::judge_case(base, busy, nullptr, false, o).verdict, Verdict::kEnvironment);
}

// The bars on synthetic runs: 5 processes a run, 1% spread between processes
// (0.7% more on each executor alone). A/A, with a machine that shifts both executors by
// ~15% between runs: at most 2% of comparisons slower or faster. An engine 5% slower, on a
// machine that moved 1% since the baseline: at least 90% slower.
TEST(JudgeCase, SyntheticAAandABBars) {
  fb::Rng rng(20261123);
  fb::CompareOptions o;
  const int trials = 400;
  int false_alarms = 0, detected = 0;
  for (int t = 0; t < trials; ++t) {
    const double night_a = std::exp(0.15 * rng.normal()), night_b = std::exp(0.15 * rng.normal());
    const fb::CaseResult a = timed(rng, scaled(process_scales(rng, 5, 0.01), night_a), 1.0, 2.0, 0.007);
    const fb::CaseResult b = timed(rng, scaled(process_scales(rng, 5, 0.01), night_b), 1.0, 2.0, 0.007);
    const double next_night = night_a * std::exp(0.01 * rng.normal());
    const fb::CaseResult slow = timed(rng, scaled(process_scales(rng, 5, 0.01), next_night), 1.05, 2.0, 0.007);
    const Verdict same = fb::judge_case(a, b, nullptr, true, o).verdict;
    false_alarms += same == Verdict::kSlower || same == Verdict::kFaster;
    detected += fb::judge_case(a, slow, nullptr, true, o).verdict == Verdict::kSlower;
  }
  EXPECT_LE(false_alarms, 0.02 * trials) << false_alarms << " of " << trials;
  EXPECT_GE(detected, 0.9 * trials) << detected << " of " << trials;
}

// Seen in A/A runs on a shared 2-core VM: a neighbour slowed most of a run's processes, the
// reference by 35% and the engine by 25%, so the speedup rose 8% with no change in the
// code; and a whole run slowed the reference by 17% and the engine by 40%, so the speedup
// fell 16%. The reference moved by the change to detect: the machine changed, whichever
// of the two moved further.
TEST(JudgeCase, AReferenceThatMovedByTheChangeToDetectIsTheEnvironment) {
  fb::Rng rng(3);
  fb::CompareOptions o;
  const fb::CaseResult base = timed(rng, process_scales(rng, 5, 0.005), 0.40, 1.03);
  const fb::CaseResult busy = timed(rng, process_scales(rng, 5, 0.005), 0.50, 1.39);
  const fb::CaseJudgement j = fb::judge_case(base, busy, nullptr, true, o);
  EXPECT_EQ(j.speedup.verdict, Verdict::kFaster);
  EXPECT_EQ(j.verdict, Verdict::kEnvironment) << j.reason;
  EXPECT_NE(j.reason.find("the machine (or the reference itself) changed"), std::string::npos) << j.reason;
  // Across machines the reference is not judged: the speedup stands.
  EXPECT_EQ(fb::judge_case(base, busy, nullptr, false, o).verdict, Verdict::kFaster);

  const fb::CaseResult slowed_run = timed(rng, process_scales(rng, 5, 0.005), 0.56, 1.206);
  const fb::CaseJudgement k = fb::judge_case(base, slowed_run, nullptr, true, o);
  EXPECT_EQ(k.speedup.verdict, Verdict::kSlower);
  EXPECT_NEAR(k.speedup.change, -0.16, 0.01);
  EXPECT_EQ(k.verdict, Verdict::kEnvironment) << k.reason;
  // A reference within the change to detect leaves the speedup's verdict standing.
  const fb::CaseResult slower = timed(rng, process_scales(rng, 5, 0.005), 0.46, 1.05);
  EXPECT_EQ(fb::judge_case(base, slower, nullptr, true, o).verdict, Verdict::kSlower);
}

// Where the history shows the reference moving 20% between runs on its own, a reference move
// of 10% no longer hides the engine: the speedup, which cancels what the machine did to both,
// is judged, and an 8% loss in it is the engine's. A reference move beyond anything the
// history saw, or opposite moves of the two beyond their noise, stay the environment.
TEST(JudgeCase, WithHistoryTheSpeedupSeparatesTheEngineFromAMovedMachine) {
  fb::Rng rng(5);
  fb::CompareOptions o;
  fb::CaseHistory h;
  h.reference = {1.0, 1.2, 0.98, 1.15, 1.0};  // steps up to 22.4% (1.2 to 0.98)
  h.engine = {0.5, 0.6, 0.49, 0.575, 0.5};
  h.speedup = {2.0, 2.0, 2.0, 2.0, 2.0};
  const fb::CaseResult base = timed(rng, process_scales(rng, 5, 0.005), 0.5, 1.0);
  const fb::CaseResult slower = timed(rng, process_scales(rng, 5, 0.005), 0.5 * 1.1 * 1.08, 1.1);
  const fb::CaseJudgement j = fb::judge_case(base, slower, &h, true, o);
  EXPECT_GT(j.reference.change, 0.08);
  EXPECT_EQ(j.verdict, Verdict::kSlower) << j.reason;
  EXPECT_NE(j.reason.find("the part of its move the machine does not explain"), std::string::npos) << j.reason;
  // Without the history the same pair cannot be separated.
  EXPECT_EQ(fb::judge_case(base, slower, nullptr, true, o).verdict, Verdict::kEnvironment);
  // A reference 35% slower: beyond the history's largest step.
  const fb::CaseResult moved = timed(rng, process_scales(rng, 5, 0.005), 0.5 * 1.35 * 1.08, 1.35);
  const fb::CaseJudgement k = fb::judge_case(base, moved, &h, true, o);
  EXPECT_EQ(k.verdict, Verdict::kEnvironment) << k.reason;
  EXPECT_NE(k.reason.find("further than between any two of its 5 earlier runs (22.4%)"), std::string::npos) << k.reason;
}

// A case disturbed while timed (its flag stored) is the environment, whatever moved.
TEST(JudgeCase, ADisturbedCaseIsTheEnvironment) {
  fb::Rng rng(9);
  fb::CompareOptions o;
  const fb::CaseResult base = timed(rng, process_scales(rng, 5, 0.005), 1.0, 2.0);
  fb::CaseResult slow = timed(rng, process_scales(rng, 5, 0.005), 1.1, 2.0);
  ASSERT_EQ(fb::judge_case(base, slow, nullptr, true, o).verdict, Verdict::kSlower);
  slow.disturbed = "process 3: other processes took 0.98 CPUs";
  const fb::CaseJudgement j = fb::judge_case(base, slow, nullptr, true, o);
  EXPECT_EQ(j.verdict, Verdict::kEnvironment);
  EXPECT_NE(j.reason.find("candidate disturbed when timed (process 3: other processes took 0.98 CPUs)"), std::string::npos)
      << j.reason;
}

fb::StoredCase stored(const std::string& scenario, int64_t batch, double engine_ms, uint64_t seed) {
  fb::Rng rng(seed);
  fb::StoredCase sc;
  sc.result = timed(rng, process_scales(rng, 5, 0.002), engine_ms, 2.0);
  sc.result.spec.scenario = scenario;
  sc.result.spec.batch = batch;
  return sc;
}

TEST(CompareRuns, MatchesByCaseKeyNotByNameOrOrder) {
  // The baseline's scenario was renamed and its matrix reordered; batch 4 is new, batch 16 gone.
  std::vector<fb::StoredCase> base{stored("old-name", 8, 1.0, 1), stored("old-name", 1, 1.0, 2),
                                   stored("old-name", 16, 1.0, 3)};
  std::vector<fb::StoredCase> cand{stored("new-name", 1, 1.0, 4), stored("new-name", 8, 1.15, 5),
                                   stored("new-name", 4, 1.0, 6)};
  const auto rows = fb::compare_runs(base, cand, fb::CompareOptions{});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].label, "new-name b=1 fp32 standard t=1");
  ASSERT_TRUE(rows[0].judgement);
  EXPECT_EQ(rows[0].judgement->verdict, Verdict::kUnchanged) << rows[0].judgement->reason;
  ASSERT_TRUE(rows[1].judgement);
  EXPECT_EQ(rows[1].judgement->verdict, Verdict::kSlower);
  EXPECT_NEAR(rows[1].judgement->engine.change, 0.15, 0.01);
  EXPECT_FALSE(rows[2].judgement);
  EXPECT_EQ(rows[2].note, "new: not in the baseline");
  EXPECT_FALSE(rows[3].judgement);
  EXPECT_EQ(rows[3].note, "gone: only in the baseline");
  EXPECT_EQ(rows[3].label, "old-name b=16 fp32 standard t=1");
}

TEST(CompareRuns, ErroredCasesAreNotComparedAndHistoryIsUsedByKey) {
  std::vector<fb::StoredCase> base{stored("s", 1, 1.0, 1)};
  std::vector<fb::StoredCase> cand{stored("s", 1, 1.0, 2)};
  fb::HistoryByKey history;
  history[base[0].result.spec.case_key()] = {{1, 1.2, 0.9, 1.1}, {2, 2.4, 1.8, 2.2}, {2, 1.7, 2.3, 1.9}};
  auto rows = fb::compare_runs(base, cand, fb::CompareOptions{}, &history);
  ASSERT_TRUE(rows[0].judgement);
  EXPECT_EQ(rows[0].judgement->speedup.noise_source, "processes (5+5) and runs (4)");
  EXPECT_EQ(rows[0].judgement->verdict, Verdict::kNoisy);
  cand[0].result.status = fb::CaseStatus::kError;
  cand[0].result.error = "node 'x' (Foo): unsupported";
  rows = fb::compare_runs(base, cand, fb::CompareOptions{});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].judgement);
  EXPECT_EQ(rows[0].note, "error in the candidate: node 'x' (Foo): unsupported");
}

TEST(SelfCheck, CountsFalseAlarmsAndDetections) {
  // Four A/A runs of one case (the machine shifting both executors between runs), the first
  // two each followed by a run with the engine 10% slower on the machine as it was.
  fb::Rng rng(11);
  std::vector<fb::SelfCheckRun> runs;
  for (double night : {1.0, 1.2, 0.9, 1.1}) {
    fb::StoredCase sc;
    sc.result = timed(rng, scaled(process_scales(rng, 5, 0.005), night), 1.0, 2.0);
    runs.push_back({false, {sc}});
    if (night == 1.0 || night == 1.2) {
      sc.result = timed(rng, scaled(process_scales(rng, 5, 0.005), night), 1.1, 2.0);
      runs.push_back({true, {sc}});
    }
  }
  ASSERT_EQ(runs.size(), 6u);
  const fb::SelfCheckReport r = fb::summarize_self_check(runs, fb::CompareOptions{});
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.comparisons, 3);  // A/A pairs skip the slowed run between them
  EXPECT_EQ(r.false_alarms, 0);
  // Every A/A pair: the machine moved, the speedup did not. Once three runs are history, the
  // engine's own noise between runs covers the shift, and the pair is simply unchanged.
  EXPECT_EQ(r.cases[0].environment, 2);
  EXPECT_EQ(r.cases[0].unchanged, 1);
  EXPECT_EQ(r.injected, 2);
  EXPECT_EQ(r.detected, 2);
  EXPECT_EQ(r.engine_detected, 2);
  EXPECT_DOUBLE_EQ(r.detection_rate(), 1.0);
  EXPECT_GT(r.cases[0].run_spread_engine, 0.08);   // the nights moved the engine
  EXPECT_LT(r.cases[0].run_spread_speedup, 0.01);  // but not the speedup
  EXPECT_GT(r.cases[0].detectable, 0);
  EXPECT_LT(r.cases[0].detectable, 0.03);
  // A slowed run with no A/A run before it has nothing to be compared with.
  runs.insert(runs.begin(), runs[1]);
  EXPECT_EQ(fb::summarize_self_check(runs, fb::CompareOptions{}).injected, 2);
}

TEST(Statistics, StudentTQuantiles) {
  // Table values: t(0.975; 1) = 12.706, t(0.995; 8) = 3.355, t(0.975; 30) = 2.042.
  EXPECT_NEAR(fb::student_t_quantile(0.975, 1), 12.7062, 1e-3);
  EXPECT_NEAR(fb::student_t_quantile(0.995, 8), 3.3554, 1e-3);
  EXPECT_NEAR(fb::student_t_quantile(0.975, 30), 2.0423, 1e-3);
  EXPECT_NEAR(fb::student_t_quantile(0.025, 30), -2.0423, 1e-3);
  EXPECT_NEAR(fb::normal_quantile(0.975), 1.95996, 1e-4);
}

TEST(Statistics, RobustLogSpread) {
  // 1.4826 times the median absolute deviation of the logs from their median.
  EXPECT_NEAR(fb::robust_log_spread({1.0, 1.01, 0.99, 1.005, 0.995}), 1.4826 * std::fabs(std::log(0.995)), 1e-12);
  // One wild value barely moves it (it shifts the median a little), where it triples the
  // standard deviation.
  const std::vector<double> calm{1.0, 1.01, 0.99, 1.005, 0.995}, wild{1.0, 1.01, 0.99, 1.005, 1.6};
  EXPECT_NEAR(fb::robust_log_spread(wild), fb::robust_log_spread(calm), 0.01 * fb::robust_log_spread(calm));
  EXPECT_GT(fb::log_spread(wild), 3 * fb::log_spread(calm));
  // A MAD of 0 (most values equal) falls back to the standard deviation; too few values: NaN.
  EXPECT_NEAR(fb::robust_log_spread({1, 1, 1, 2}), fb::log_spread({1, 1, 1, 2}), 1e-12);
  EXPECT_TRUE(std::isnan(fb::robust_log_spread({1.0})));
  EXPECT_TRUE(std::isnan(fb::robust_log_spread({1.0, -1.0})));
}

TEST(JudgeFigure, OneWildProcessIsNotAVerdict) {
  // Four processes agree; one ran into a burst of other work. The figure is the median of
  // the processes and the noise their robust spread, so the burst moves neither.
  fb::CompareOptions o;
  const std::vector<double> base{1.0, 1.002, 0.998, 1.001, 0.999};
  const std::vector<double> cand{1.0, 1.002, 0.998, 1.001, 1.6};
  const fb::FigureChange c =
      fb::judge_figure(figure(fb::percentile(base, 0.5), base), figure(fb::percentile(cand, 0.5), cand), {}, false, o);
  EXPECT_NEAR(c.change, 0.001, 1e-9);
  EXPECT_EQ(c.verdict, Verdict::kUnchanged);
}

// Each process contributes its 5th-percentile time: a case's figures are the medians over
// processes of those, and its speedup each process's own ratio of them.
TEST(CaseFigures, MedianOverProcessesOfEachProcesssFloor) {
  fb::CaseResult r;
  for (int p = 0; p < 3; ++p)
    for (int i = 0; i < 21; ++i) {
      // Process p: engine times 1+p/10 + i/100 (5th percentile: 1+p/10 + 0.01), reference twice that.
      r.engine.samples_ms.push_back(1 + 0.1 * p + 0.01 * i);
      r.reference.samples_ms.push_back(2 * (1 + 0.1 * p + 0.01 * i));
      r.engine.sample_process.push_back(p);
      r.reference.sample_process.push_back(p);
    }
  EXPECT_EQ(fb::process_floors(r.engine).size(), 3u);
  EXPECT_NEAR(fb::process_floors(r.engine)[2], 1.21, 1e-12);
  const fb::JudgedFigures f = fb::judged_figures(r);
  EXPECT_NEAR(f.engine.value, 1.11, 1e-12);
  EXPECT_NEAR(f.reference.value, 2.22, 1e-12);
  EXPECT_NEAR(f.speedup.value, 2.0, 1e-12);
  EXPECT_EQ(f.speedup.per_process.size(), 3u);
  // One process: the run's median and interval.
  fb::CaseResult one;
  one.engine.stats.median = 3;
  one.engine.stats.boot_ci_low = 2.9;
  const fb::FigureValue e = fb::judged_figures(one).engine;
  EXPECT_DOUBLE_EQ(e.value, 3);
  EXPECT_TRUE(e.per_process.empty());
  EXPECT_DOUBLE_EQ(e.interval.low, 2.9);
}

}  // namespace

// load_history reads each case of the baseline run back to its latest 10 values on the same
// machine (all judge_figure reads), oldest first, errored results and other machines left
// out, and nothing for keys the baseline run does not hold.
TEST(LoadHistory, TheLatestTenValuesOfEachBaselineCaseOnItsMachine) {
  const std::string db = ::testing::TempDir() + "fusebench_load_history_" + std::to_string(::getpid()) + ".db";
  std::remove(db.c_str());
  int64_t up_to = 0;
  {
    fb::ResultStore store(db);
    for (int n = 0; n < 15; ++n) {
      fb::RunInfo info;
      info.started_at = "2024-08-" + std::string(n < 9 ? "0" : "") + std::to_string(n + 1) + "T02:00:00Z";
      info.host = n == 12 ? "other-host" : "bench";  // night 13 ran elsewhere
      const int64_t run = store.begin_run(info);
      fb::CaseResult kept;
      kept.spec.model_hash = "kept";
      kept.engine.stats.median = 1 + n;  // the night's number, to see which nights were read
      kept.reference.stats.median = 2 * (1 + n);
      kept.speedup = 2;
      if (n == 10) kept.status = fb::CaseStatus::kError;
      store.write_case(run, kept);
      if (n < 14) {  // a case the last night does not hold
        fb::CaseResult gone = kept;
        gone.spec.model_hash = "gone";
        gone.status = fb::CaseStatus::kPassed;
        store.write_case(run, gone);
      }
      store.finish_run(run);
      up_to = run;
    }
    const fb::HistoryByKey h = fb::load_history(store, up_to);
    fb::CaseResult key;
    key.spec.model_hash = "kept";
    ASSERT_EQ(h.size(), 1u);
    const fb::CaseHistory& kept = h.at(key.spec.case_key());
    // Nights 15 back to 4, without 13 (another host) and 11 (errored): ten values.
    EXPECT_EQ(kept.engine, (std::vector<double>{4, 5, 6, 7, 8, 9, 10, 12, 14, 15}));
    EXPECT_EQ(kept.reference, (std::vector<double>{8, 10, 12, 14, 16, 18, 20, 24, 28, 30}));
    EXPECT_EQ(kept.speedup, std::vector<double>(10, 2.0));
  }
  std::remove(db.c_str());
}
