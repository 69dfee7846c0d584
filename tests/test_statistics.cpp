// Summary statistics: known values (numpy's percentile rule, the sample stddev), the edge
// cases n = 0 and n = 1, the median's distribution-free confidence interval, Tukey's outlier
// counts, and the seeded bootstrap intervals with their coverage.
#include "harness/stats/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include <gtest/gtest.h>

#include "harness/stats/bootstrap.h"
#include "harness/stats/random.h"

namespace {

std::vector<double> one_to(size_t n) {
  std::vector<double> x(n);
  std::iota(x.begin(), x.end(), 1.0);
  return x;
}

TEST(Percentile, MatchesNumpyLinearRule) {
  EXPECT_DOUBLE_EQ(fb::percentile({1, 2, 3, 4}, 0.5), 2.5);
  // np.percentile(range(1, 11), [90, 99]) == [9.1, 9.91]
  EXPECT_DOUBLE_EQ(fb::percentile(one_to(10), 0.9), 9.1);
  EXPECT_DOUBLE_EQ(fb::percentile(one_to(10), 0.99), 9.91);
  // np.percentile([15, 20, 35, 40, 50], 40) == 29.0
  EXPECT_DOUBLE_EQ(fb::percentile({15, 20, 35, 40, 50}, 0.4), 29.0);
  EXPECT_DOUBLE_EQ(fb::percentile({15, 20, 35, 40, 50}, 0.0), 15);
  EXPECT_DOUBLE_EQ(fb::percentile({15, 20, 35, 40, 50}, 1.0), 50);
  EXPECT_DOUBLE_EQ(fb::percentile({7}, 0.9), 7);
  EXPECT_DOUBLE_EQ(fb::percentile({}, 0.5), 0);
}

TEST(Percentile, SortsUnsortedInput) {
  EXPECT_DOUBLE_EQ(fb::percentile({4, 1, 3, 2}, 0.5), 2.5);
  EXPECT_DOUBLE_EQ(fb::percentile({50, 15, 40, 20, 35}, 0.4), 29.0);
}

TEST(ComputeStats, KnownValues) {
  // mean 5, population stddev 2, sample stddev sqrt(32 / 7)
  fb::SampleStats s = fb::compute_stats({9, 2, 4, 4, 5, 4, 5, 7});
  EXPECT_EQ(s.n, 8u);
  EXPECT_DOUBLE_EQ(s.mean, 5);
  EXPECT_NEAR(s.stddev, std::sqrt(32.0 / 7.0), 1e-12);
  EXPECT_DOUBLE_EQ(s.median, 4.5);
  EXPECT_DOUBLE_EQ(s.min, 2);
  EXPECT_DOUBLE_EQ(s.max, 9);
  EXPECT_DOUBLE_EQ(s.p90, fb::percentile({2, 4, 4, 4, 5, 5, 7, 9}, 0.9));  // 7.6
  EXPECT_DOUBLE_EQ(s.p90, 7.6);
  EXPECT_DOUBLE_EQ(s.p99, 8.86);
  EXPECT_DOUBLE_EQ(s.ci_low, 2);  // n = 8 < 9: the whole range
  EXPECT_DOUBLE_EQ(s.ci_high, 9);
  EXPECT_DOUBLE_EQ(s.p95, 8.3);   // np.percentile([2, 4, 4, 4, 5, 5, 7, 9], 95)
  EXPECT_NEAR(s.cv, std::sqrt(32.0 / 7.0) / 5, 1e-12);
  // Quartiles 4 and 5.5, IQR 1.5: fences 1.75 and 7.75, so 9 lies above, nothing below.
  EXPECT_EQ(s.outliers_low, 0);
  EXPECT_EQ(s.outliers_high, 1);
  EXPECT_LE(s.boot_ci_low, s.median);
  EXPECT_GE(s.boot_ci_high, s.median);
}

TEST(TukeyOutliers, CountsBothSidesAndNeedsFourSamples) {
  // 1..20 plus -50, 100 and 101: Q1 = 5.5, Q3 = 16.5 over the 23 values; fences -11 and 33.
  std::vector<double> x = one_to(20);
  x.push_back(-50);
  x.push_back(100);
  x.push_back(101);
  auto [lo, hi] = fb::tukey_outliers(x);
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 2);
  EXPECT_EQ(fb::tukey_outliers({1, 2, 1000}), std::make_pair(0, 0));  // too few for quartiles
  EXPECT_EQ(fb::tukey_outliers({5, 5, 5, 5, 5}), std::make_pair(0, 0));  // IQR 0, nothing beyond
}

TEST(ComputeStats, MedianOfEvenCount) {
  EXPECT_DOUBLE_EQ(fb::compute_stats({1, 2, 3, 4}).median, 2.5);
}

TEST(ComputeStats, NoSamplesGivesZeros) {
  fb::SampleStats s = fb::compute_stats({});
  EXPECT_EQ(s.n, 0u);
  for (double v : {s.median, s.p90, s.p95, s.p99, s.mean, s.stddev, s.min, s.max, s.ci_low, s.ci_high, s.cv,
                   s.boot_ci_low, s.boot_ci_high})
    EXPECT_EQ(v, 0);
  EXPECT_EQ(s.outliers_low + s.outliers_high, 0);
}

TEST(ComputeStats, OneSample) {
  fb::SampleStats s = fb::compute_stats({3.5});
  EXPECT_EQ(s.n, 1u);
  EXPECT_EQ(s.stddev, 0);
  EXPECT_EQ(s.cv, 0);
  for (double v : {s.median, s.p90, s.p95, s.p99, s.mean, s.min, s.max, s.ci_low, s.ci_high, s.boot_ci_low,
                   s.boot_ci_high})
    EXPECT_EQ(v, 3.5);
}

TEST(ComputeStats, CiIsTheMedianCi) {
  std::vector<double> x = one_to(50);
  fb::SampleStats s = fb::compute_stats(x);
  auto [lo, hi] = fb::median_ci(x);
  EXPECT_EQ(s.ci_low, lo);
  EXPECT_EQ(s.ci_high, hi);
}

// Ranks from published tables of the distribution-free 95% CI of the median.
TEST(MedianCi, KnownRanks) {
  struct Row { size_t n; double lo, hi; };
  for (Row r : {Row{1, 1, 1}, Row{2, 1, 2}, Row{5, 1, 5}, Row{6, 1, 6}, Row{8, 1, 8}, Row{9, 2, 8},
                Row{10, 2, 9}, Row{20, 6, 15}, Row{50, 18, 33}, Row{100, 40, 61}}) {
    SCOPED_TRACE("n = " + std::to_string(r.n));
    auto [lo, hi] = fb::median_ci(one_to(r.n));
    EXPECT_EQ(lo, r.lo);
    EXPECT_EQ(hi, r.hi);
  }
  auto [lo, hi] = fb::median_ci({});
  EXPECT_EQ(lo, 0);
  EXPECT_EQ(hi, 0);
}

TEST(MedianCi, SmallSamplesGiveTheRange) {
  for (size_t n = 1; n < 6; ++n) {
    std::vector<double> x = one_to(n);
    auto [lo, hi] = fb::median_ci(x);
    EXPECT_EQ(lo, x.front());
    EXPECT_EQ(hi, x.back());
  }
  // At 99% even n = 6 falls short, so the range again.
  auto [lo, hi] = fb::median_ci(one_to(6), 0.99);
  EXPECT_EQ(lo, 1);
  EXPECT_EQ(hi, 6);
}

TEST(MedianCi, NormalApproximationJoinsTheExactSums) {
  // n = 1000 is the last exact one, 1001 the first approximated: the ranks must agree.
  EXPECT_EQ(fb::median_ci(one_to(1000)).first, 469);
  EXPECT_EQ(fb::median_ci(one_to(1001)).first, 469);
  auto [lo, hi] = fb::median_ci(one_to(100000));
  EXPECT_EQ(lo + hi, 100001);  // symmetric ranks
  EXPECT_NEAR(hi - lo, 1.96 * std::sqrt(100000.0), 3);
}

TEST(MedianCi, CoversTheTrueMedianOfANormalDistribution) {
  std::mt19937_64 rng(20240501);
  std::normal_distribution<double> normal(10.0, 2.0);  // true median 10
  int covered = 0;
  for (int trial = 0; trial < 1000; ++trial) {
    std::vector<double> x(50);
    for (double& v : x) v = normal(rng);
    std::sort(x.begin(), x.end());
    auto [lo, hi] = fb::median_ci(x);
    covered += lo <= 10.0 && 10.0 <= hi;
  }
  // The exact coverage for n = 50 is about 0.967.
  EXPECT_GE(covered, 930);
}

TEST(MedianRelCi, KnownValueAndEdges) {
  // 1..50: median 25.5, CI [18, 33].
  EXPECT_DOUBLE_EQ(fb::median_rel_ci_halfwidth(one_to(50)), 7.5 / 25.5);
  constexpr double kInf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(fb::median_rel_ci_halfwidth({}), kInf);
  EXPECT_EQ(fb::median_rel_ci_halfwidth({4}), kInf);
  EXPECT_EQ(fb::median_rel_ci_halfwidth({-1, 0, 1}), kInf);
  EXPECT_DOUBLE_EQ(fb::median_rel_ci_halfwidth({2, 2, 2, 2, 2, 2, 2}), 0);
}

// ---- bootstrap ----

// Skewed, timing-like samples: a floor plus an exponential tail of `spread` (relative);
// the true median is floor · (1 + spread · ln 2).
std::vector<double> timing_like(fb::Rng& rng, size_t n, double floor, double spread) {
  std::vector<double> x(n);
  for (double& v : x) v = floor * (1 - spread * std::log(1 - rng.uniform()));
  return x;
}

TEST(Bootstrap, IsDeterministicForASeedAndBracketsTheMedian) {
  fb::Rng rng(7);
  std::vector<double> x = timing_like(rng, 200, 1.0, 0.05);
  fb::Interval a = fb::bootstrap_median_ci(x), b = fb::bootstrap_median_ci(x);
  EXPECT_EQ(a.low, b.low);
  EXPECT_EQ(a.high, b.high);
  const double median = fb::percentile(x, 0.5);
  EXPECT_LT(a.low, median);
  EXPECT_GT(a.high, median);
  // Another seed moves the limits a little, not the picture.
  fb::Interval c = fb::bootstrap_median_ci(x, 0.95, fb::kBootstrapResamples, 99);
  EXPECT_NEAR(c.low, a.low, 0.01);
  EXPECT_NEAR(c.high, a.high, 0.01);
  // Unsorted input gives the same interval as sorted.
  std::vector<double> sorted = x;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(fb::bootstrap_median_ci(sorted).low, a.low);
}

TEST(Bootstrap, EdgeCases) {
  fb::Interval none = fb::bootstrap_median_ci({});
  EXPECT_EQ(none.low, 0);
  EXPECT_EQ(none.high, 0);
  fb::Interval one = fb::bootstrap_median_ci({2.5});
  EXPECT_EQ(one.low, 2.5);
  EXPECT_EQ(one.high, 2.5);
  fb::Interval same = fb::bootstrap_median_ci({3, 3, 3, 3});
  EXPECT_EQ(same.low, 3);
  EXPECT_EQ(same.high, 3);
  // Ratio of constants is exact; an empty side or a zero denominator gives {0, 0}.
  fb::Interval r = fb::bootstrap_ratio_ci({6, 6, 6}, {2, 2});
  EXPECT_DOUBLE_EQ(r.low, 3);
  EXPECT_DOUBLE_EQ(r.high, 3);
  EXPECT_EQ(fb::bootstrap_ratio_ci({1, 2}, {}).high, 0);
  EXPECT_EQ(fb::bootstrap_ratio_ci({1, 2}, {0, 0}).high, 0);
}

// The bar: at 95% nominal, the interval of the speedup (ratio of medians) covers
// the true ratio in at least 93% of trials. 50 samples a side, 600 seeded trials, for two
// noise shapes: skewed timing-like noise and symmetric lognormal noise.
TEST(Bootstrap, RatioIntervalCoversTheTrueRatio) {
  fb::Rng rng(20240601);
  const int trials = 600;
  int covered_skewed = 0, covered_lognormal = 0;
  for (int t = 0; t < trials; ++t) {
    // Skewed: reference floor 2.0, engine floor 1.25; same relative spread, so the true
    // ratio of medians is 1.6.
    std::vector<double> ref = timing_like(rng, 50, 2.0, 0.05), eng = timing_like(rng, 50, 1.25, 0.05);
    fb::Interval ci = fb::bootstrap_ratio_ci(ref, eng, 0.95, fb::kBootstrapResamples, rng.next());
    covered_skewed += ci.low <= 1.6 && 1.6 <= ci.high;
    // Lognormal with CV about 3% and medians 3.0 / 2.0: true ratio 1.5.
    std::vector<double> a(50), b(50);
    for (double& v : a) v = 3.0 * std::exp(0.03 * rng.normal());
    for (double& v : b) v = 2.0 * std::exp(0.03 * rng.normal());
    ci = fb::bootstrap_ratio_ci(a, b, 0.95, fb::kBootstrapResamples, rng.next());
    covered_lognormal += ci.low <= 1.5 && 1.5 <= ci.high;
  }
  EXPECT_GE(covered_skewed, 0.93 * trials) << covered_skewed << " of " << trials;
  EXPECT_GE(covered_lognormal, 0.93 * trials) << covered_lognormal << " of " << trials;
}

TEST(Bootstrap, MedianIntervalCoversTheTrueMedian) {
  fb::Rng rng(11);
  const int trials = 600;
  int covered = 0;
  const double true_median = 1.0 * (1 + 0.05 * std::log(2.0));
  for (int t = 0; t < trials; ++t) {
    std::vector<double> x = timing_like(rng, 60, 1.0, 0.05);
    fb::Interval ci = fb::bootstrap_median_ci(x, 0.95, fb::kBootstrapResamples, rng.next());
    covered += ci.low <= true_median && true_median <= ci.high;
  }
  EXPECT_GE(covered, 0.93 * trials) << covered << " of " << trials;
}

}  // namespace
