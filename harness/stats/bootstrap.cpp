#include "harness/stats/bootstrap.h"

#include <algorithm>
#include <string>

#include "engine/ir/error.h"
#include "harness/stats/random.h"
#include "harness/stats/statistics.h"

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

// One hierarchical resample: k processes drawn with replacement, each drawn process's
// samples drawn with replacement (as many as it has); the median of all of them.
double hierarchical_draw(const ProcessGroups& groups, const std::vector<size_t>& picks, Rng& rng,
                         std::vector<double>& scratch) {
  scratch.clear();
  for (size_t p : picks) {
    const std::vector<double>& g = groups[p];
    for (size_t i = 0; i < g.size(); ++i) scratch.push_back(g[rng.below(g.size())]);
  }
  const size_t n = scratch.size();
  // The median as percentile(0.5) defines it: the mean of the two middle order statistics.
  const auto mid = scratch.begin() + static_cast<std::ptrdiff_t>(n / 2);
  std::nth_element(scratch.begin(), mid, scratch.end());
  if (n % 2 == 1) return *mid;
  return 0.5 * (*mid + *std::max_element(scratch.begin(), mid));
}

ProcessGroups non_empty(const ProcessGroups& groups) {
  ProcessGroups out;
  for (const auto& g : groups)
    if (!g.empty()) out.push_back(g);
  return out;
}

void draw_processes(size_t k, Rng& rng, std::vector<size_t>& picks) {
  picks.resize(k);
  for (size_t& p : picks) p = k == 1 ? 0 : rng.below(k);
}

}  // namespace

ProcessGroups group_by_process(const std::vector<double>& samples, const std::vector<int>& process) {
  if (process.empty()) return samples.empty() ? ProcessGroups{} : ProcessGroups{samples};
  FB_CHECK(process.size() == samples.size(), "process indices and samples differ in length");
  ProcessGroups groups;
  for (size_t i = 0; i < samples.size(); ++i) {
    FB_CHECK(process[i] >= 0, "negative process index");
    const size_t p = static_cast<size_t>(process[i]);
    if (groups.size() <= p) groups.resize(p + 1);
    groups[p].push_back(samples[i]);
  }
  return non_empty(groups);
}

Interval hierarchical_median_ci(const ProcessGroups& groups_in, double confidence, int resamples, uint64_t seed) {
  check_args(confidence, resamples);
  const ProcessGroups groups = non_empty(groups_in);
  if (groups.empty()) return {};
  Rng rng(seed);
  std::vector<size_t> picks;
  std::vector<double> scratch, medians(static_cast<size_t>(resamples));
  for (double& m : medians) {
    draw_processes(groups.size(), rng, picks);
    m = hierarchical_draw(groups, picks, rng, scratch);
  }
  return percentile_interval(medians, confidence);
}

Interval hierarchical_ratio_ci(const ProcessGroups& numerator, const ProcessGroups& denominator, double confidence,
                               int resamples, uint64_t seed) {
  check_args(confidence, resamples);
  FB_CHECK(numerator.size() == denominator.size(), "ratio sides hold different numbers of processes");
  ProcessGroups num, den;  // keep a process only where both sides have samples
  for (size_t p = 0; p < numerator.size(); ++p)
    if (!numerator[p].empty() && !denominator[p].empty()) num.push_back(numerator[p]), den.push_back(denominator[p]);
  if (num.empty()) return {};
  Rng rng(seed);
  std::vector<size_t> picks;
  std::vector<double> scratch, ratios(static_cast<size_t>(resamples));
  for (double& r : ratios) {
    draw_processes(num.size(), rng, picks);
    const double a = hierarchical_draw(num, picks, rng, scratch);
    const double b = hierarchical_draw(den, picks, rng, scratch);
    if (!(b > 0)) return {};
    r = a / b;
  }
  return percentile_interval(ratios, confidence);
}

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

Interval bootstrap_difference_ci(const std::vector<double>& a, const std::vector<double>& b, double confidence,
                                 int resamples, uint64_t seed) {
  check_args(confidence, resamples);
  if (a.empty() || b.empty()) return {};
  const std::vector<double> xa = sorted_copy(a), xb = sorted_copy(b);
  Rng rng(seed);
  MedianResampler draw_a(xa), draw_b(xb);
  std::vector<double> diffs(static_cast<size_t>(resamples));
  for (double& d : diffs) d = draw_a.draw(rng) - draw_b.draw(rng);
  return percentile_interval(diffs, confidence);
}

}  // namespace fb
