// compare: the Mann–Whitney test against hand-computed values, the verdict rules, matching
// by case key, and the property bars on seeded synthetic samples — a 5% slowdown
// at CV 2% with 50 samples is flagged in at least 95% of trials, an unchanged case in at
// most 2%.
#include "harness/compare.h"

#include <gtest/gtest.h>

#include <cmath>

#include "engine/ir/error.h"
#include "harness/random.h"
#include "harness/statistics.h"

namespace {

std::vector<double> normal_samples(fb::Rng& rng, size_t n, double mean, double cv) {
  std::vector<double> x(n);
  for (double& v : x) v = mean * (1 + cv * rng.normal());
  return x;
}

TEST(MannWhitney, SeparatedSamples) {
  // U = 0 of 25; z = (12.5 - 0.5) / sqrt(25 · 11 / 12) = 2.50672; p = erfc(z / sqrt 2).
  fb::MannWhitney r = fb::mann_whitney({1, 2, 3, 4, 5}, {6, 7, 8, 9, 10});
  EXPECT_DOUBLE_EQ(r.u, 0);
  EXPECT_NEAR(r.z, -2.5067182457620487, 1e-12);
  EXPECT_NEAR(r.p, 0.012185780355344818, 1e-12);
  // Symmetric: the other way round gives U = 25 and the same p.
  fb::MannWhitney s = fb::mann_whitney({6, 7, 8, 9, 10}, {1, 2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(s.u, 25);
  EXPECT_NEAR(s.p, r.p, 1e-15);
}

TEST(MannWhitney, TiesUseMidRanksAndTheTieCorrection) {
  // Pooled 1 2 2 2 3 3 4 5: mid-ranks 1, 3, 3, 3, 5.5, 5.5, 7, 8. R_a = 1 + 3 + 3 + 5.5 = 12.5,
  // U = 2.5; var = 16/12 · (9 − (24 + 6) / 56); z = −(5.5 − 0.5) / sqrt(var).
  fb::MannWhitney r = fb::mann_whitney({1, 2, 2, 3}, {2, 3, 4, 5});
  EXPECT_DOUBLE_EQ(r.u, 2.5);
  const double var = 16.0 / 12.0 * (9 - 30.0 / 56.0);
  EXPECT_NEAR(r.z, -5 / std::sqrt(var), 1e-12);
  EXPECT_NEAR(r.p, std::erfc(5 / std::sqrt(var) / std::sqrt(2.0)), 1e-12);
}

TEST(MannWhitney, DegenerateInputs) {
  EXPECT_EQ(fb::mann_whitney({}, {1, 2}).p, 1);
  EXPECT_EQ(fb::mann_whitney({3, 3, 3}, {3, 3}).p, 1);  // all ties: no evidence
  EXPECT_EQ(fb::mann_whitney({1}, {1}).p, 1);
}

TEST(CompareSamples, VerdictRules) {
  fb::Rng rng(3);
  fb::CompareOptions o;
  const std::vector<double> base = normal_samples(rng, 200, 1.0, 0.01);
  // 10% faster, clearly.
  fb::SampleComparison faster = fb::compare_samples(base, normal_samples(rng, 200, 0.9, 0.01), o);
  EXPECT_EQ(faster.verdict, fb::Verdict::kFaster);
  EXPECT_NEAR(faster.change, -0.1, 0.005);
  EXPECT_LT(faster.change_ci.low, faster.change);
  EXPECT_GT(faster.change_ci.high, faster.change);
  // 1% slower with 200 samples at CV 1%: significant, but below the 2% minimum effect, and
  // the interval lies inside ±2%: unchanged.
  fb::SampleComparison tiny = fb::compare_samples(base, normal_samples(rng, 200, 1.01, 0.01), o);
  EXPECT_LT(tiny.p_value, o.alpha);
  EXPECT_EQ(tiny.verdict, fb::Verdict::kUnchanged);
  // The same samples from a case flagged noisy cannot be declared unchanged.
  fb::SampleComparison flagged = fb::compare_samples(base, normal_samples(rng, 200, 1.0, 0.01), o, true);
  EXPECT_EQ(flagged.verdict, fb::Verdict::kNoisy);
  // CV 30% with 10 samples: an interval far wider than ±2%, and nothing significant: noisy.
  fb::SampleComparison wide =
      fb::compare_samples(normal_samples(rng, 10, 1.0, 0.3), normal_samples(rng, 10, 1.0, 0.3), o);
  EXPECT_EQ(wide.verdict, fb::Verdict::kNoisy);
  // Too few samples to say anything.
  EXPECT_EQ(fb::compare_samples({1.0}, {2.0}, o).verdict, fb::Verdict::kNoisy);
  EXPECT_STREQ(fb::verdict_name(fb::Verdict::kSlower), "slower");
  EXPECT_STREQ(fb::verdict_name(fb::Verdict::kUnchanged), "unchanged");
}

// The bars, with the default options (alpha 0.01, min effect 2%).
TEST(CompareSamples, FlagsAFivePercentSlowdownAndLeavesNoiseAlone) {
  fb::Rng rng(20240602);
  fb::CompareOptions o;
  const int trials = 400;
  int slower_flagged = 0, noise_flagged = 0, noise_unchanged = 0;
  for (int t = 0; t < trials; ++t) {
    const std::vector<double> base = normal_samples(rng, 50, 1.0, 0.02);
    slower_flagged += fb::compare_samples(base, normal_samples(rng, 50, 1.05, 0.02), o).verdict == fb::Verdict::kSlower;
    const fb::Verdict same = fb::compare_samples(base, normal_samples(rng, 50, 1.0, 0.02), o).verdict;
    noise_flagged += same == fb::Verdict::kSlower || same == fb::Verdict::kFaster;
    noise_unchanged += same == fb::Verdict::kUnchanged;
  }
  EXPECT_GE(slower_flagged, 0.95 * trials) << slower_flagged << " of " << trials;
  EXPECT_LE(noise_flagged, 0.02 * trials) << noise_flagged << " of " << trials;
  // And the rest is called unchanged, not pushed into "noisy".
  EXPECT_GE(noise_unchanged, 0.95 * trials) << noise_unchanged << " of " << trials;
}

fb::StoredCase stored(const std::string& scenario, int64_t batch, double engine_ms, uint64_t seed) {
  fb::StoredCase sc;
  fb::CaseResult& r = sc.result;
  r.spec.scenario = scenario;
  r.spec.model_hash = "abc";
  r.spec.batch = batch;
  fb::Rng rng(seed);
  r.engine.samples_ms = normal_samples(rng, 60, engine_ms, 0.01);
  r.reference.samples_ms = normal_samples(rng, 60, 2 * engine_ms, 0.01);
  r.engine.stats = fb::compute_stats(r.engine.samples_ms);
  r.reference.stats = fb::compute_stats(r.reference.samples_ms);
  return sc;
}

TEST(CompareRuns, MatchesByCaseKeyNotByNameOrOrder) {
  // The baseline's scenario was renamed and its matrix reordered; batch 4 is new, batch 16 gone.
  std::vector<fb::StoredCase> base{stored("old-name", 8, 2.0, 1), stored("old-name", 1, 1.0, 2),
                                   stored("old-name", 16, 5.0, 3)};
  std::vector<fb::StoredCase> cand{stored("new-name", 1, 1.0, 4), stored("new-name", 8, 2.3, 5),
                                   stored("new-name", 4, 1.5, 6)};
  cand[2].result.status = "passed";
  const auto rows = fb::compare_runs(base, cand, fb::CompareOptions{});
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(rows[0].label, "new-name b=1 fp32 standard t=1");
  ASSERT_TRUE(rows[0].comparison);
  EXPECT_EQ(rows[0].comparison->verdict, fb::Verdict::kUnchanged);
  ASSERT_TRUE(rows[1].comparison);
  EXPECT_EQ(rows[1].comparison->verdict, fb::Verdict::kSlower);
  EXPECT_NEAR(rows[1].comparison->change, 0.15, 0.01);
  EXPECT_FALSE(rows[2].comparison);
  EXPECT_EQ(rows[2].note, "new: not in the baseline");
  EXPECT_FALSE(rows[3].comparison);
  EXPECT_EQ(rows[3].note, "gone: only in the baseline");
  EXPECT_EQ(rows[3].label, "old-name b=16 fp32 standard t=1");

  // The reference executor's samples instead (made twice the engine's here, so they moved too).
  fb::CompareOptions ref;
  ref.executor = "reference";
  EXPECT_EQ(fb::compare_runs(base, cand, ref)[1].comparison->verdict, fb::Verdict::kSlower);  // 2·2.3 vs 2·2.0
  ref.executor = "gpu";
  EXPECT_THROW(fb::compare_runs(base, cand, ref), fb::Error);
}

TEST(CompareRuns, ErroredCasesAreNotCompared) {
  std::vector<fb::StoredCase> base{stored("s", 1, 1.0, 1)};
  std::vector<fb::StoredCase> cand{stored("s", 1, 1.0, 2)};
  cand[0].result.status = "error";
  cand[0].result.error = "node 'x' (Foo): unsupported";
  const auto rows = fb::compare_runs(base, cand, fb::CompareOptions{});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_FALSE(rows[0].comparison);
  EXPECT_EQ(rows[0].note, "error in the candidate: node 'x' (Foo): unsupported");
}

}  // namespace
