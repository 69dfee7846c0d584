#include "harness/bootstrap.h"

#include <algorithm>
#include <string>

#include "engine/ir/error.h"
#include "harness/random.h"
#include "harness/statistics.h"

namespace fb {
namespace {

// Draws one resample of `sorted` (with replacement) and returns its median. Only how often
// each order statistic is drawn matters, so the resample is a count per index and the
// median is found by walking the counts: O(n), no sort, no copy of the values.
class MedianResampler {
 public:
  explicit MedianResampler(const std::vector<double>& sorted) : x_(sorted), counts_(sorted.size()) {}

  double draw(Rng& rng) {
    const size_t n = x_.size();
    std::fill(counts_.begin(), counts_.end(), 0u);
    for (size_t i = 0; i < n; ++i) ++counts_[rng.below(n)];
    // 0-based ranks of the two middle values (the same one when n is odd), as percentile(0.5).
    const size_t lo_rank = (n - 1) / 2, hi_rank = n / 2;
    size_t seen = 0, k = 0;
    while (seen + counts_[k] <= lo_rank) seen += counts_[k++];
    const double lo = x_[k];
    while (seen + counts_[k] <= hi_rank) seen += counts_[k++];
    return 0.5 * (lo + x_[k]);
  }

 private:
  const std::vector<double>& x_;
  std::vector<unsigned> counts_;
};

std::vector<double> sorted_copy(const std::vector<double>& v) {
  std::vector<double> s = v;
  std::sort(s.begin(), s.end());
  return s;
}

void check_args(double confidence, int resamples) {
  FB_CHECK(confidence > 0 && confidence < 1, "bootstrap confidence must lie in (0, 1), got " + std::to_string(confidence));
  FB_CHECK(resamples >= 10, "bootstrap needs at least 10 resamples, got " + std::to_string(resamples));
}

Interval percentile_interval(std::vector<double>& stats, double confidence) {
  std::sort(stats.begin(), stats.end());
  const double tail = (1 - confidence) / 2;
  return {percentile(stats, tail), percentile(stats, 1 - tail)};
}

}  // namespace

Interval bootstrap_median_ci(const std::vector<double>& samples, double confidence, int resamples, uint64_t seed) {
  check_args(confidence, resamples);
  if (samples.empty()) return {};
  const std::vector<double> x = sorted_copy(samples);
  if (x.size() == 1) return {x[0], x[0]};
  Rng rng(seed);
  MedianResampler draw(x);
  std::vector<double> medians(static_cast<size_t>(resamples));
  for (double& m : medians) m = draw.draw(rng);
  return percentile_interval(medians, confidence);
}

Interval bootstrap_ratio_ci(const std::vector<double>& numerator, const std::vector<double>& denominator,
                            double confidence, int resamples, uint64_t seed) {
  check_args(confidence, resamples);
  if (numerator.empty() || denominator.empty()) return {};
  const std::vector<double> num = sorted_copy(numerator), den = sorted_copy(denominator);
  Rng rng(seed);
  MedianResampler draw_num(num), draw_den(den);
  std::vector<double> ratios(static_cast<size_t>(resamples));
  for (double& r : ratios) {
    const double a = draw_num.draw(rng), b = draw_den.draw(rng);
    if (!(b > 0)) return {};
    r = a / b;
  }
  return percentile_interval(ratios, confidence);
}

}  // namespace fb
