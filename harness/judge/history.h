// Change points in a nightly series: E-divisive means (Matteson & James, "A nonparametric
// approach for multiple change point analysis of multivariate data", JASA 2014; the method
// behind MongoDB's and Hunter's performance-regression detection), with a seeded
// permutation test deciding whether each candidate is significant. It assumes nothing
// about the noise's distribution, so day-to-day jitter is not flagged while a sustained
// step is.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fb {

struct ChangePointOptions {
  double alpha = 0.01;       // a change is kept when its permutation p-value is below this
  int permutations = 199;    // p-values come in steps of 1 / (permutations + 1)
  int min_segment = 3;       // points on each side of a change, at least
  uint64_t seed = 1;         // seeds the permutations: the same series always gives the same answer
};

struct ChangePoint {
  size_t index = 0;      // the first point after the change (the run where it began)
  double p_value = 1;
  double q = 0;          // the divergence statistic at the split
  double before = 0;     // median of the segment before the change
  double after = 0;      // median of the segment from the change up to the next one
  double step = 0;       // after / before - 1
};

// Every significant change point of `series`, in order of index. Each round takes, over the
// current segments, the split with the largest divergence (energy distance with exponent
// 1, scaled by m·n/(m+n)) and tests it by permuting that segment; the first split that is not
// significant ends the search.
std::vector<ChangePoint> e_divisive(const std::vector<double>& series, const ChangePointOptions& options = {});

}  // namespace fb
