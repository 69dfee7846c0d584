#include "harness/history.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/ir/error.h"
#include "harness/random.h"
#include "harness/statistics.h"

namespace fb {
namespace {

struct Split {
  size_t tau = 0;  // first index of the right part, relative to the segment
  double q = -1;   // -1: no admissible split
};

// The best split of z (a segment): for every tau with at least `min` points each side,
// Q = m n / (m + n) · (2/(m n) B − 2/(m (m−1)) Wx − 2/(n (n−1)) Wy), where B sums |x − y|
// across the split and Wx, Wy within each side. Moving tau by one moves one point from
// right to left, so B, Wx and Wy follow from that point's distance sums to the points
// before and after it: O(T²) for the sums, O(T) for the scan.
Split best_split(const std::vector<double>& z, size_t min, double exponent) {
  const size_t t = z.size();
  Split best;
  if (t < 2 * min) return best;
  std::vector<double> left(t, 0), right(t, 0);  // sum of |z_k - z_i| over i < k, over i > k
  for (size_t k = 0; k < t; ++k)
    for (size_t i = 0; i < k; ++i) {
      const double a = std::fabs(z[k] - z[i]);
      const double d = exponent == 1 ? a : exponent == 2 ? a * a : std::pow(a, exponent);
      left[k] += d;
      right[i] += d;
    }
  double wx = 0, wy = 0, b = 0;
  for (size_t k = 0; k < t; ++k) wy += left[k];  // every pair, all on the right at tau = 0
  for (size_t tau = 1; tau + min <= t; ++tau) {
    const size_t k = tau - 1;  // the point that just moved left
    wx += left[k];
    wy -= right[k];
    b += right[k] - left[k];
    if (tau < min) continue;
    const double m = static_cast<double>(tau), n = static_cast<double>(t - tau);
    const double e = 2 * b / (m * n) - 2 * wx / (m * (m - 1)) - 2 * wy / (n * (n - 1));
    const double q = m * n / (m + n) * e;
    if (q > best.q) best = {tau, q};
  }
  return best;
}

// The permutation p-value of the best split's Q for segment z: how often a shuffled segment
// (no change, by construction) splits at least as well. Stops once the answer cannot fall
// below alpha: most segments of pure noise are settled in a few shuffles.
double permutation_p(const std::vector<double>& z, double q, size_t min, const ChangePointOptions& o, Rng& rng) {
  const double r = o.permutations;
  std::vector<double> shuffled = z;
  int exceed = 0;
  for (int i = 0; i < o.permutations; ++i) {
    for (size_t k = shuffled.size() - 1; k > 0; --k) std::swap(shuffled[k], shuffled[rng.below(k + 1)]);
    if (best_split(shuffled, min, o.exponent).q >= q) ++exceed;
    if ((exceed + 1) / (r + 1) >= o.alpha) return (exceed + 1) / (r + 1);  // a lower bound, enough to say no
  }
  return (exceed + 1) / (r + 1);
}

}  // namespace

std::vector<ChangePoint> e_divisive(const std::vector<double>& series, const ChangePointOptions& o) {
  FB_CHECK(o.min_segment >= 2, "e_divisive needs min_segment >= 2 (within-side distances need pairs)");
  FB_CHECK(o.permutations >= 1, "e_divisive needs at least one permutation");
  FB_CHECK(o.exponent > 0 && o.exponent <= 2, "e_divisive's exponent must lie in (0, 2]");
  for (double v : series)
    if (!std::isfinite(v)) throw Error("change-point series holds a value that is not finite");
  const size_t min = static_cast<size_t>(o.min_segment);
  Rng rng(o.seed);
  std::vector<size_t> bounds{0, series.size()};  // segment edges, sorted
  std::vector<ChangePoint> found;
  for (;;) {
    // The strongest split over all current segments.
    Split best;
    size_t seg_begin = 0, seg_end = 0;
    for (size_t s = 0; s + 1 < bounds.size(); ++s) {
      const std::vector<double> seg(series.begin() + static_cast<std::ptrdiff_t>(bounds[s]),
                                    series.begin() + static_cast<std::ptrdiff_t>(bounds[s + 1]));
      const Split split = best_split(seg, min, o.exponent);
      if (split.q > best.q) best = split, seg_begin = bounds[s], seg_end = bounds[s + 1];
    }
    if (best.q <= 0) break;  // no admissible split, or nothing but ties
    const std::vector<double> seg(series.begin() + static_cast<std::ptrdiff_t>(seg_begin),
                                  series.begin() + static_cast<std::ptrdiff_t>(seg_end));
    const double p = permutation_p(seg, best.q, min, o, rng);
    if (p >= o.alpha) break;
    ChangePoint cp;
    cp.index = seg_begin + best.tau;
    cp.p_value = p;
    cp.q = best.q;
    found.push_back(cp);
    bounds.insert(std::upper_bound(bounds.begin(), bounds.end(), cp.index), cp.index);
  }
  std::sort(found.begin(), found.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  // Step sizes from the final segmentation: each change against its neighbours.
  for (size_t i = 0; i < found.size(); ++i) {
    const size_t lo = i == 0 ? 0 : found[i - 1].index;
    const size_t hi = i + 1 < found.size() ? found[i + 1].index : series.size();
    const auto at = [&](size_t k) { return series.begin() + static_cast<std::ptrdiff_t>(k); };
    found[i].before = percentile(std::vector<double>(at(lo), at(found[i].index)), 0.5);
    found[i].after = percentile(std::vector<double>(at(found[i].index), at(hi)), 0.5);
    found[i].step = found[i].before != 0 ? found[i].after / found[i].before - 1 : 0;
  }
  return found;
}

}  // namespace fb
