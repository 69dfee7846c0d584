#include "harness/stats/statistics.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <tuple>

#include "engine/ir/error.h"
#include "harness/stats/bootstrap.h"

namespace fb {

namespace {

// Above this many samples the binomial quantile comes from the normal approximation; below,
// from exact sums (in log space, so 2^-n does not underflow to garbage).
constexpr size_t kExactBinomialMaxN = 1000;

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }


// The 1-based lower rank j of the median CI (the upper is n + 1 - j): the largest j with
// P(B <= j - 1) <= (1 - confidence) / 2, B ~ Binomial(n, 1/2), so that
// P(j <= B < n + 1 - j) >= confidence. 0 when even [min, max] falls short.
size_t median_ci_rank(size_t n, double confidence) {
  const double tail = (1 - confidence) / 2;
  if (n > kExactBinomialMaxN) {
    // P(B <= j - 1) ~ Phi((j - 1/2 - n/2) / (sqrt(n)/2)) with continuity correction.
    double z = normal_quantile(1 - tail);
    double j = std::floor(n / 2.0 + 0.5 - z * std::sqrt(static_cast<double>(n)) / 2);
    return j < 0 ? 0 : static_cast<size_t>(j);
  }
  const double dn = static_cast<double>(n);
  const double log_norm = std::lgamma(dn + 1) + dn * std::log(0.5);
  double cdf = 0;
  size_t j = 0;
  for (size_t i = 0; i <= n / 2; ++i) {
    const double di = static_cast<double>(i);
    cdf += std::exp(log_norm - std::lgamma(di + 1) - std::lgamma(dn - di + 1));
    if (cdf > tail * (1 + 1e-12)) break;  // the tolerance keeps exact ties on the inclusive side
    j = i + 1;
  }
  return j;
}

// The callers' vectors are meant to be sorted; a copy is sorted only when they are not.
template <class F>
auto with_sorted(const std::vector<double>& v, F f) {
  if (std::is_sorted(v.begin(), v.end())) return f(v);
  std::vector<double> copy = v;
  std::sort(copy.begin(), copy.end());
  return f(copy);
}

// The continued fraction of the regularized incomplete beta function I_x(a, b) (Lentz's
// method), valid for x < (a + 1) / (a + b + 2); the caller uses the symmetry otherwise.
double beta_continued_fraction(double a, double b, double x) {
  constexpr double kTiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (std::fabs(d) < kTiny) d = kTiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double dm = m;
    double num = dm * (b - dm) * x / ((a + 2 * dm - 1) * (a + 2 * dm));
    for (int step = 0; step < 2; ++step) {
      d = 1 + num * d;
      if (std::fabs(d) < kTiny) d = kTiny;
      c = 1 + num / c;
      if (std::fabs(c) < kTiny) c = kTiny;
      d = 1 / d;
      h *= d * c;
      num = -(a + dm) * (a + b + dm) * x / ((a + 2 * dm) * (a + 2 * dm + 1));
    }
    if (std::fabs(d * c - 1) < 1e-15) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) +
                                b * std::log(1 - x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_continued_fraction(a, b, x) / a;
  return 1 - front * beta_continued_fraction(b, a, 1 - x) / b;
}

double student_t_cdf(double t, double df) {
  const double tail = 0.5 * incomplete_beta(df / 2, 0.5, df / (df + t * t));
  return t > 0 ? 1 - tail : tail;
}

}  // namespace

double log_spread(const std::vector<double>& values) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (values.size() < 2) return kNaN;
  double mean = 0;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) return kNaN;
    mean += std::log(v);
  }
  mean /= static_cast<double>(values.size());
  double ss = 0;
  for (double v : values) ss += (std::log(v) - mean) * (std::log(v) - mean);
  return std::sqrt(ss / static_cast<double>(values.size() - 1));
}

double robust_log_spread(const std::vector<double>& values) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  if (values.size() < 2) return kNaN;
  std::vector<double> logs;
  for (double v : values) {
    if (!(v > 0) || !std::isfinite(v)) return kNaN;
    logs.push_back(std::log(v));
  }
  const double center = percentile(logs, 0.5);
  for (double& l : logs) l = std::fabs(l - center);
  // 1.4826 × MAD is the standard deviation of a normal sample with that MAD.
  const double mad_sd = 1.4826 * percentile(logs, 0.5);
  // Half the values or more equal (MAD 0) says little with a few values: then the classic spread.
  return mad_sd > 0 ? mad_sd : log_spread(values);
}

// By bisection: called once per interval, so simplicity wins.
double normal_quantile(double q) {
  FB_CHECK(q > 0 && q < 1, "normal_quantile q must lie in (0, 1), got " + std::to_string(q));
  double lo = -40, hi = 40;
  for (int i = 0; i < 200 && hi - lo > 1e-15; ++i) {
    double mid = 0.5 * (lo + hi);
    (normal_cdf(mid) < q ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double student_t_quantile(double q, double df) {
  FB_CHECK(q > 0 && q < 1, "student_t_quantile q must lie in (0, 1), got " + std::to_string(q));
  FB_CHECK(df >= 1, "student_t_quantile needs df >= 1, got " + std::to_string(df));
  double lo = -1e6, hi = 1e6;
  for (int i = 0; i < 200 && hi - lo > 1e-12 * std::max(1.0, std::fabs(lo)); ++i) {
    const double mid = 0.5 * (lo + hi);
    (student_t_cdf(mid, df) < q ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

double percentile(std::vector<double> sorted, double q) {
  FB_CHECK(q >= 0 && q <= 1, "percentile q must lie in [0, 1], got " + std::to_string(q));
  if (sorted.empty()) return 0;
  if (!std::is_sorted(sorted.begin(), sorted.end())) std::sort(sorted.begin(), sorted.end());
  const double h = static_cast<double>(sorted.size() - 1) * q;
  const size_t lo = static_cast<size_t>(std::floor(h));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (h - static_cast<double>(lo)) * (sorted[hi] - sorted[lo]);
}

std::pair<double, double> median_ci(const std::vector<double>& sorted, double confidence) {
  FB_CHECK(confidence > 0 && confidence < 1,
           "median_ci confidence must lie in (0, 1), got " + std::to_string(confidence));
  return with_sorted(sorted, [&](const std::vector<double>& x) -> std::pair<double, double> {
    const size_t n = x.size();
    if (n == 0) return {0, 0};
    size_t j = std::max<size_t>(median_ci_rank(n, confidence), 1);
    j = std::min(j, (n + 1) / 2);
    return {x[j - 1], x[n - j]};
  });
}

double median_rel_ci_halfwidth(const std::vector<double>& sorted) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  if (sorted.size() < 2) return kInf;
  return with_sorted(sorted, [&](const std::vector<double>& x) {
    const double median = percentile(x, 0.5);
    if (median == 0) return kInf;
    auto [lo, hi] = median_ci(x);
    return (hi - lo) / 2 / std::fabs(median);
  });
}

std::pair<int, int> tukey_outliers(const std::vector<double>& sorted) {
  return with_sorted(sorted, [](const std::vector<double>& x) -> std::pair<int, int> {
    if (x.size() < 4) return {0, 0};
    const double q1 = percentile(x, 0.25), q3 = percentile(x, 0.75);
    const double lo = q1 - 1.5 * (q3 - q1), hi = q3 + 1.5 * (q3 - q1);
    const auto below = std::lower_bound(x.begin(), x.end(), lo) - x.begin();
    const auto above = x.end() - std::upper_bound(x.begin(), x.end(), hi);
    return {static_cast<int>(below), static_cast<int>(above)};
  });
}

SampleStats compute_stats(const std::vector<double>& samples_ms) {
  SampleStats s;
  s.n = samples_ms.size();
  if (s.n == 0) return s;
  for (double v : samples_ms) FB_CHECK(std::isfinite(v), "timing sample is not finite");

  std::vector<double> sorted = samples_ms;
  std::sort(sorted.begin(), sorted.end());
  s.min = sorted.front();
  s.max = sorted.back();
  s.median = percentile(sorted, 0.5);
  s.p90 = percentile(sorted, 0.9);
  s.p95 = percentile(sorted, 0.95);
  s.p99 = percentile(sorted, 0.99);
  s.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(s.n);
  if (s.n >= 2) {
    double ss = 0;  // two passes: no cancellation when samples sit far from zero
    for (double v : sorted) ss += (v - s.mean) * (v - s.mean);
    s.stddev = std::sqrt(ss / static_cast<double>(s.n - 1));
  }
  s.cv = s.mean != 0 ? s.stddev / std::fabs(s.mean) : 0;
  std::tie(s.ci_low, s.ci_high) = median_ci(sorted);
  const Interval boot = bootstrap_median_ci(sorted);
  s.boot_ci_low = boot.low;
  s.boot_ci_high = boot.high;
  std::tie(s.outliers_low, s.outliers_high) = tukey_outliers(sorted);
  return s;
}

std::pair<double, double> wilson_interval(int64_t successes, int64_t n, double confidence) {
  if (n <= 0) return {0, 1};
  const double z = normal_quantile(1 - (1 - confidence) / 2), p = double(successes) / double(n), nn = double(n);
  const double centre = (p + z * z / (2 * nn)) / (1 + z * z / nn);
  const double half = z / (1 + z * z / nn) * std::sqrt(p * (1 - p) / nn + z * z / (4 * nn * nn));
  return {std::max(0.0, centre - half), std::min(1.0, centre + half)};
}

}  // namespace fb
