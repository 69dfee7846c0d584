// Summary statistics of timing samples. The median and its confidence interval are
// distribution-free (order statistics), because timing samples are skewed and heavy-tailed:
// a mean ± stddev would be pulled by every interrupt and page fault.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace fb {

// Summary statistics of one executor's samples, all in milliseconds.
struct SampleStats {
  size_t n = 0;
  double median = 0, p90 = 0, p95 = 0, p99 = 0, mean = 0, stddev = 0, min = 0, max = 0;
  double cv = 0;                   // stddev / mean (0 when the mean is 0)
  double ci_low = 0, ci_high = 0;  // 95% confidence interval of the median (order statistics)
  double boot_ci_low = 0, boot_ci_high = 0;  // 95% seeded bootstrap interval of the median
  int outliers_low = 0, outliers_high = 0;   // samples beyond Tukey's fences (1.5 IQR from the quartiles)

  bool operator==(const SampleStats&) const = default;
};

// Everything in SampleStats from the samples in the order run. n == 0 gives all zeros;
// n == 1 gives stddev 0 (the sample stddev, with n - 1, for n >= 2) and cv 0; a mean of 0
// gives cv 0. The bootstrap interval is seeded (kBootstrapSeed), so it is reproducible.
SampleStats compute_stats(const std::vector<double>& samples_ms);

// How many samples lie below Q1 - 1.5 IQR and above Q3 + 1.5 IQR (Tukey's fences, with
// the quartiles as percentile() defines them). {0, 0} for fewer than 4 samples, where
// quartiles say nothing.
std::pair<int, int> tukey_outliers(const std::vector<double>& sorted);

// The q-quantile, q in [0, 1], interpolating linearly between order statistics (numpy's
// default, "linear"). Sorts its copy if it is not sorted already; 0 for no samples.
double percentile(std::vector<double> sorted, double q);

// The `confidence` interval of the median by binomial order statistics: the 1-based ranks
// j, k = n + 1 - j with the largest j such that P(j <= B < k) >= confidence for
// B ~ Binomial(n, 0.5), i.e. [sorted[j-1], sorted[k-1]]. Exact binomial sums for n <= 1000,
// a normal approximation above. When no j qualifies (n < 6 at 95%) the interval is
// [min, max]. {0, 0} for no samples.
std::pair<double, double> median_ci(const std::vector<double>& sorted, double confidence = 0.95);

// Relative half-width of the median's 95% CI: (hi - lo) / 2 / median; +inf when n < 2 or
// the median is 0. The timer stops once this falls below TimingConfig::target_rel_ci.
double median_rel_ci_halfwidth(const std::vector<double>& sorted);

// The sample standard deviation of log(values): for small spreads the relative standard
// deviation, and "twice as slow" and "half as slow" count alike. NaN for fewer than two
// values or any value that is not positive and finite.
double log_spread(const std::vector<double>& values);

// The spread of log(values) that one wild value cannot inflate: 1.4826 times the median
// absolute deviation from the median (the standard deviation, for normal values). With the
// median of the values as their center, it is what compare judges per-process figures by: a
// process hit by a burst of other work moves neither. Falls back to log_spread when the MAD
// is 0 (most values equal); NaN as log_spread.
double robust_log_spread(const std::vector<double>& values);

// The Wilson score interval of a proportion: `successes` of `n` trials at `confidence`
// (a load case's valid rate over its runs). {0, 1} for n = 0.
std::pair<double, double> wilson_interval(int64_t successes, int64_t n, double confidence = 0.95);

// The standard normal q-quantile, q in (0, 1).
double normal_quantile(double q);

// The q-quantile of Student's t distribution with `df` degrees of freedom (df >= 1,
// q in (0, 1)): what a mean of a few processes' values must clear to count, where the
// normal quantile would claim too much from too few. By bisection on the CDF (regularized
// incomplete beta function, continued fraction).
double student_t_quantile(double q, double df);

}  // namespace fb
