// compare: a figure's change judged against its noise between processes (pooled, Student's t)
// or between earlier runs, the case verdict from speedup and engine time together
// (environment when both executors moved alike; speedup only across machines), matching by
// case key, and the A/A / A/B bars on seeded synthetic runs whose machine shifts between runs.
#include "harness/compare.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "engine/ir/error.h"
#include "harness/process_merge.h"
#include "harness/random.h"
#include "harness/selfcheck.h"
#include "harness/statistics.h"

namespace {

using fb::Verdict;

fb::FigureValue figure(double value, std::vector<double> per_process) { return {value, std::move(per_process), {}}; }

std::vector<double> scaled(const std::vector<double>& v, double f) {
  std::vector<double> out;
  for (double x : v) out.push_back(x * f);
  return out;
}

const std::vector<double> kFive{1.00, 1.01, 0.99, 1.005, 0.995};

TEST(JudgeFigure, NoiseFromProcessesIsThePooledSpreadWithStudentsT) {
  fb::CompareOptions o;
  const fb::FigureChange c = fb::judge_figure(figure(1.0, kFive), figure(1.05, scaled(kFive, 1.05)), {}, false, o);
  EXPECT_NEAR(c.rank_p, 2.0 / 252, 1e-12);  // every candidate process slower than every baseline one
  double mean = 0, var = 0;
  for (double x : kFive) mean += std::log(x) / 5;
  for (double x : kFive) var += std::pow(std::log(x) - mean, 2) / 4;  // the same spread on both sides
  const double se = std::sqrt(var * (1.0 / 5 + 1.0 / 5));
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

TEST(JudgeFigure, NoiseAboveTheChangeToDetectIsNoisy) {
  const std::vector<double> wide{1.0, 1.08, 0.93, 1.05, 0.96};
  fb::CompareOptions o;
  const fb::FigureChange c = fb::judge_figure(figure(1.0, wide), figure(1.02, scaled(wide, 1.02)), {}, false, o);
  EXPECT_GT(c.detectable, o.min_effect);
  EXPECT_EQ(c.verdict, Verdict::kNoisy);
  // Asked to detect 20%, the same data can say unchanged.
  o.min_effect = 0.2;
  EXPECT_EQ(fb::judge_figure(figure(1.0, wide), figure(1.02, scaled(wide, 1.02)), {}, false, o).verdict,
            Verdict::kUnchanged);
}

TEST(JudgeFigure, HistoryWidensTheNoiseWhenRunsMoveMoreThanProcesses) {
  fb::CompareOptions o;
  const std::vector<double> nights{1.0, 1.1, 0.92, 1.06, 0.97};
  const fb::FigureChange c = fb::judge_figure(figure(1.0, kFive), figure(1.05, scaled(kFive, 1.05)), nights, false, o);
  EXPECT_EQ(c.noise_source, "runs (5)");
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
// (0.7% more on each executor alone), and a machine that shifts both executors by ~15%
// between runs. A/A: at most 2% of
// comparisons slower or faster; an engine 5% slower: at least 90% slower.
TEST(JudgeCase, SyntheticAAandABBars) {
  fb::Rng rng(20261123);
  fb::CompareOptions o;
  const int trials = 400;
  int false_alarms = 0, detected = 0;
  for (int t = 0; t < trials; ++t) {
    const double night_a = std::exp(0.15 * rng.normal()), night_b = std::exp(0.15 * rng.normal());
    const fb::CaseResult a = timed(rng, scaled(process_scales(rng, 5, 0.01), night_a), 1.0, 2.0, 0.007);
    const fb::CaseResult b = timed(rng, scaled(process_scales(rng, 5, 0.01), night_b), 1.0, 2.0, 0.007);
    const fb::CaseResult slow = timed(rng, scaled(process_scales(rng, 5, 0.01), night_b), 1.05, 2.0, 0.007);
    const Verdict same = fb::judge_case(a, b, nullptr, true, o).verdict;
    false_alarms += same == Verdict::kSlower || same == Verdict::kFaster;
    detected += fb::judge_case(a, slow, nullptr, true, o).verdict == Verdict::kSlower;
  }
  EXPECT_LE(false_alarms, 0.02 * trials) << false_alarms << " of " << trials;
  EXPECT_GE(detected, 0.9 * trials) << detected << " of " << trials;
}

fb::StoredCase stored(const std::string& scenario, int64_t batch, double engine_ms, uint64_t seed) {
  fb::Rng rng(seed);
  fb::StoredCase sc;
  sc.result = timed(rng, process_scales(rng, 5, 0.002), engine_ms, 2.0);  // 5: the rank test can decide
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
  EXPECT_EQ(rows[0].judgement->speedup.noise_source, "runs (4)");
  EXPECT_EQ(rows[0].judgement->verdict, Verdict::kNoisy);
  cand[0].result.status = "error";
  cand[0].result.error = "node 'x' (Foo): unsupported";
  rows = fb::compare_runs(base, cand, fb::CompareOptions{});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].judgement);
  EXPECT_EQ(rows[0].note, "error in the candidate: node 'x' (Foo): unsupported");
}

TEST(SelfCheck, CountsFalseAlarmsAndDetections) {
  // Four A/A runs of one case (the machine shifting both executors between runs), then two
  // runs with the engine 10% slower.
  fb::Rng rng(11);
  std::vector<std::vector<fb::StoredCase>> aa, slowed;
  for (double night : {1.0, 1.2, 0.9, 1.1}) {
    fb::StoredCase sc;
    sc.result = timed(rng, scaled(process_scales(rng, 5, 0.005), night), 1.0, 2.0);
    aa.push_back({sc});
  }
  for (int i = 0; i < 2; ++i) {
    fb::StoredCase sc;
    sc.result = timed(rng, process_scales(rng, 5, 0.005), 1.1, 2.0);
    slowed.push_back({sc});
  }
  const fb::SelfCheckReport r = fb::summarize_self_check(aa, slowed, fb::CompareOptions{});
  ASSERT_EQ(r.cases.size(), 1u);
  EXPECT_EQ(r.comparisons, 3);
  EXPECT_EQ(r.false_alarms, 0);
  // Every A/A pair: the machine moved, the speedup did not. Once three runs are history, the
  // engine's own noise between runs covers the shift, and the pair is simply unchanged.
  EXPECT_EQ(r.cases[0].environment, 2);
  EXPECT_EQ(r.cases[0].unchanged, 1);
  EXPECT_EQ(r.injected, 2);
  EXPECT_EQ(r.detected, 2);
  EXPECT_DOUBLE_EQ(r.detection_rate(), 1.0);
  EXPECT_GT(r.cases[0].run_spread_engine, 0.08);   // the nights moved the engine
  EXPECT_LT(r.cases[0].run_spread_speedup, 0.01);  // but not the speedup
  EXPECT_GT(r.cases[0].detectable, 0);
  EXPECT_LT(r.cases[0].detectable, 0.03);
}

TEST(Statistics, StudentTQuantiles) {
  // Table values: t(0.975; 1) = 12.706, t(0.995; 8) = 3.355, t(0.975; 30) = 2.042.
  EXPECT_NEAR(fb::student_t_quantile(0.975, 1), 12.7062, 1e-3);
  EXPECT_NEAR(fb::student_t_quantile(0.995, 8), 3.3554, 1e-3);
  EXPECT_NEAR(fb::student_t_quantile(0.975, 30), 2.0423, 1e-3);
  EXPECT_NEAR(fb::student_t_quantile(0.025, 30), -2.0423, 1e-3);
  EXPECT_NEAR(fb::normal_quantile(0.975), 1.95996, 1e-4);
}

TEST(Statistics, ExactRankSumP) {
  // 5 against 5, completely separated: 2 of the C(10, 5) = 252 splits are as extreme.
  EXPECT_NEAR(fb::rank_sum_p({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10}), 2.0 / 252, 1e-12);
  EXPECT_NEAR(fb::rank_sum_p({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5}), 2.0 / 252, 1e-12);
  // One value out of place: rank sum 16 (or 39); splits at least as far from 27.5: 4 each side.
  EXPECT_NEAR(fb::rank_sum_p({1, 2, 3, 4, 6}, {5, 7, 8, 9, 10}), 4.0 / 252, 1e-12);
  // 4 against 4 can never reach 0.01: 2 / C(8, 4) = 0.029.
  EXPECT_NEAR(fb::rank_sum_p({1, 2, 3, 4}, {5, 6, 7, 8}), 2.0 / 70, 1e-12);
  // Ties take mid-ranks; all tied is no evidence.
  EXPECT_DOUBLE_EQ(fb::rank_sum_p({3, 3}, {3, 3}), 1.0);
  EXPECT_DOUBLE_EQ(fb::rank_sum_p({}, {1}), 1.0);
}

TEST(JudgeFigure, OneWildProcessIsNotAVerdict) {
  // Four processes agree; one ran into a burst of other work. The t interval, fooled by the
  // outlier's pull on the mean, might call it; the rank test does not.
  fb::CompareOptions o;
  const std::vector<double> base{1.0, 1.002, 0.998, 1.001, 0.999};
  const std::vector<double> cand{1.0, 1.002, 0.998, 1.001, 1.6};
  const fb::FigureChange c = fb::judge_figure(figure(1.0, base), figure(1.12, cand), {}, false, o);
  EXPECT_GT(c.rank_p, o.alpha);
  EXPECT_NE(c.verdict, Verdict::kSlower);
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
      if (n == 10) kept.status = "error";
      store.write_case(run, kept);
      if (n < 14) {  // a case the last night does not hold
        fb::CaseResult gone = kept;
        gone.spec.model_hash = "gone";
        gone.status = "passed";
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
