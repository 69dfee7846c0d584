// Seeded percentile-bootstrap confidence intervals for a median and for the ratio of two
// medians (the speedup). Deterministic: the same samples, confidence, resample count and
// seed always give the same interval, so a stored CI can be recomputed from its samples.
#pragma once
#include <cstdint>
#include <vector>

namespace fb {

struct Interval {
  double low = 0, high = 0;
};

// 1000 resamples put the 2.5% and 97.5% points within about ±0.5 percentile rank of the
// limit — finer than the sampling error of any timing median we keep.
constexpr int kBootstrapResamples = 1000;
constexpr uint64_t kBootstrapSeed = 0x66b5e7c4a1d20931ull;

// The `confidence` percentile-bootstrap interval of the median (the median as percentile()
// defines it). {0, 0} for no samples; {x, x} for one.
Interval bootstrap_median_ci(const std::vector<double>& samples, double confidence = 0.95,
                             int resamples = kBootstrapResamples, uint64_t seed = kBootstrapSeed);

// The interval of median(numerator) / median(denominator), each side resampled on its own
// (the executors' samples are two samples, not pairs: pairing by iteration would claim a
// correlation that interleaving is there to remove). speedup = ratio(reference, engine).
// {0, 0} when either side is empty or a resampled denominator median is not positive.
Interval bootstrap_ratio_ci(const std::vector<double>& numerator, const std::vector<double>& denominator,
                            double confidence = 0.95, int resamples = kBootstrapResamples,
                            uint64_t seed = kBootstrapSeed);

}  // namespace fb
