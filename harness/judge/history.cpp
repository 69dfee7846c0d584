#include "harness/judge/history.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/ir/error.h"
#include "harness/stats/random.h"
#include "harness/stats/statistics.h"

namespace fb {
namespace {

struct Split {
  size_t tau = 0;  // first index of the right part, relative to the segment
  double q = -1;   // -1: no admissible split
};

// The best split of one segment, and of its shuffles for the permutation test. For every tau
// with at least `min` points each side, Q = m n / (m + n) · (2/(m n) B − 2/(m (m−1)) Wx −
// 2/(n (n−1)) Wy), where B sums |x − y| across the split and Wx, Wy within each side. Moving
// tau by one moves one point from right to left, so B, Wx and Wy follow from that point's
// distance sums to the points before it (left) and after it (right). A shuffle keeps the
// segment's values, so their ranks and each value's distance sum to all the others are
// taken once; a point's left sum then comes from a Fenwick tree of the count and sum of the
// values placed before it, by rank, and its right sum is its total less its left: O(T log T)
// per ordering where summing every pair took O(T²).
class SegmentSplitter {
 public:
  SegmentSplitter(std::vector<double>::const_iterator begin, std::vector<double>::const_iterator end, size_t min)
      : t_(static_cast<size_t>(end - begin)), min_(min), rank_(t_), sorted_(t_), total_(t_), tree_(t_ + 1) {
    std::vector<uint32_t> by_value(t_);
    for (size_t i = 0; i < t_; ++i) by_value[i] = static_cast<uint32_t>(i);
    std::stable_sort(by_value.begin(), by_value.end(), [&](uint32_t a, uint32_t b) { return begin[a] < begin[b]; });
    // Centred on the middle value: the sums below subtract totals of nearby magnitude.
    const double centre = t_ ? begin[by_value[t_ / 2]] : 0;
    for (size_t j = 0; j < t_; ++j) rank_[by_value[j]] = static_cast<uint32_t>(j), sorted_[j] = begin[by_value[j]] - centre;
    double all = 0;
    for (double y : sorted_) all += y;
    double below = 0;  // sum of the values ranked before j
    for (size_t j = 0; j < t_; ++j) {
      const double y = sorted_[j], lo = static_cast<double>(j), hi = static_cast<double>(t_ - 1 - j);
      total_[j] = (y * lo - below) + ((all - below - y) - y * hi);
      below += y;
    }
  }

  // The segment in its own order, as ranks: shuffle this for the permutation test.
  const std::vector<uint32_t>& ranks() const { return rank_; }

  // The best split of the segment's values placed in the order `ranks`.
  Split best(const std::vector<uint32_t>& ranks) {
    Split best;
    if (t_ < 2 * min_) return best;
    left_.assign(t_, 0);
    right_.assign(t_, 0);
    std::fill(tree_.begin(), tree_.end(), Node{});
    double placed = 0;  // sum of the values placed so far
    for (size_t k = 0; k < t_; ++k) {
      const uint32_t r = ranks[k];
      const double y = sorted_[r];
      Node less;  // the values placed before k that rank below it
      for (size_t i = r; i > 0; i &= i - 1) less.count += tree_[i].count, less.sum += tree_[i].sum;
      const double n_less = static_cast<double>(less.count), n_more = static_cast<double>(k - less.count);
      left_[k] = (y * n_less - less.sum) + ((placed - less.sum) - y * n_more);
      right_[k] = total_[r] - left_[k];
      for (size_t i = r + 1; i <= t_; i += i & (~i + 1)) ++tree_[i].count, tree_[i].sum += y;
      placed += y;
    }
    double wx = 0, wy = 0, b = 0;
    for (size_t k = 0; k < t_; ++k) wy += left_[k];  // every pair, all on the right at tau = 0
    for (size_t tau = 1; tau + min_ <= t_; ++tau) {
      const size_t k = tau - 1;  // the point that just moved left
      wx += left_[k];
      wy -= right_[k];
      b += right_[k] - left_[k];
      if (tau < min_) continue;
      const double m = static_cast<double>(tau), n = static_cast<double>(t_ - tau);
      const double e = 2 * b / (m * n) - 2 * wx / (m * (m - 1)) - 2 * wy / (n * (n - 1));
      const double q = m * n / (m + n) * e;
      if (q > best.q) best = {tau, q};
    }
    return best;
  }

 private:
  struct Node {
    size_t count = 0;
    double sum = 0;
  };
  size_t t_, min_;
  std::vector<uint32_t> rank_;  // each point's rank by value
  std::vector<double> sorted_;  // the values in rank order, less the centre
  std::vector<double> total_;   // by rank: the sum of that value's distances to all the others
  std::vector<Node> tree_;      // Fenwick tree over ranks of the values placed so far
  std::vector<double> left_, right_;
};

// The permutation p-value of the best split's Q for a segment: how often a shuffled segment
// (no change, by construction) splits at least as well. Stops once the answer cannot fall
// below alpha: most segments of pure noise are settled in a few shuffles.
double permutation_p(SegmentSplitter& segment, double q, const ChangePointOptions& o, Rng& rng) {
  const double r = o.permutations;
  std::vector<uint32_t> shuffled = segment.ranks();
  int exceed = 0;
  for (int i = 0; i < o.permutations; ++i) {
    for (size_t k = shuffled.size() - 1; k > 0; --k) std::swap(shuffled[k], shuffled[rng.below(k + 1)]);
    if (segment.best(shuffled).q >= q) ++exceed;
    if ((exceed + 1) / (r + 1) >= o.alpha) return (exceed + 1) / (r + 1);  // a lower bound, enough to say no
  }
  return (exceed + 1) / (r + 1);
}

}  // namespace

std::vector<ChangePoint> e_divisive(const std::vector<double>& series, const ChangePointOptions& o) {
  FB_CHECK(o.min_segment >= 2, "e_divisive needs min_segment >= 2 (within-side distances need pairs)");
  FB_CHECK(o.permutations >= 1, "e_divisive needs at least one permutation");
  for (double v : series)
    if (!std::isfinite(v)) throw Error("change-point series holds a value that is not finite");
  const size_t min = static_cast<size_t>(o.min_segment);
  Rng rng(o.seed);
  std::vector<size_t> bounds{0, series.size()};  // segment edges, sorted
  const auto at = [&](size_t k) { return series.begin() + static_cast<std::ptrdiff_t>(k); };
  const auto split_of = [&](size_t s) {
    SegmentSplitter segment(at(bounds[s]), at(bounds[s + 1]), min);
    return segment.best(segment.ranks());
  };
  std::vector<Split> splits{split_of(0)};  // each segment's best split: only a new segment's changes
  std::vector<ChangePoint> found;
  for (;;) {
    // The strongest split over all current segments.
    size_t best = 0;
    for (size_t s = 1; s < splits.size(); ++s)
      if (splits[s].q > splits[best].q) best = s;
    if (splits[best].q <= 0) break;  // no admissible split, or nothing but ties
    SegmentSplitter segment(at(bounds[best]), at(bounds[best + 1]), min);
    const double p = permutation_p(segment, splits[best].q, o, rng);
    if (p >= o.alpha) break;
    ChangePoint cp;
    cp.index = bounds[best] + splits[best].tau;
    cp.p_value = p;
    cp.q = splits[best].q;
    found.push_back(cp);
    bounds.insert(bounds.begin() + static_cast<std::ptrdiff_t>(best) + 1, cp.index);
    splits[best] = split_of(best);
    splits.insert(splits.begin() + static_cast<std::ptrdiff_t>(best) + 1, split_of(best + 1));
  }
  std::sort(found.begin(), found.end(), [](const ChangePoint& a, const ChangePoint& b) { return a.index < b.index; });
  // Step sizes from the final segmentation: each change against its neighbours.
  for (size_t i = 0; i < found.size(); ++i) {
    const size_t lo = i == 0 ? 0 : found[i - 1].index;
    const size_t hi = i + 1 < found.size() ? found[i + 1].index : series.size();
    found[i].before = percentile(std::vector<double>(at(lo), at(found[i].index)), 0.5);
    found[i].after = percentile(std::vector<double>(at(found[i].index), at(hi)), 0.5);
    found[i].step = found[i].before != 0 ? found[i].after / found[i].before - 1 : 0;
  }
  return found;
}

}  // namespace fb
