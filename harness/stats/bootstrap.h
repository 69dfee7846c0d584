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

// Samples grouped by the worker process that took them: groups[p] holds process p's.
using ProcessGroups = std::vector<std::vector<double>>;

// Splits samples by their process index (parallel vectors; an empty `process` puts every
// sample in one group). Groups come out in process order; empty ones are dropped.
ProcessGroups group_by_process(const std::vector<double>& samples, const std::vector<int>& process);

// The hierarchical bootstrap interval of the pooled median: each resample draws the
// processes with replacement, then within each drawn process its samples with replacement,
// and takes the median of all drawn samples. The interval thus reflects how much a re-run
// in new processes would move, not only the scatter within one process. With one group it
// is the ordinary bootstrap of that group. {0, 0} when there are no samples.
Interval hierarchical_median_ci(const ProcessGroups& groups, double confidence = 0.95,
                                int resamples = kBootstrapResamples, uint64_t seed = kBootstrapSeed);

// The same for median(numerator) / median(denominator) where numerator[p] and denominator[p]
// were taken in the same process p (the interleaved executors): each resample draws one set
// of processes for both sides, so what a process does to both (its memory layout, its
// neighbours) cancels in the ratio as it does in the measurement. The sides must have the
// same number of groups. {0, 0} when either side is empty or a denominator median is not positive.
Interval hierarchical_ratio_ci(const ProcessGroups& numerator, const ProcessGroups& denominator,
                               double confidence = 0.95, int resamples = kBootstrapResamples,
                               uint64_t seed = kBootstrapSeed);
// The interval of median(a) - median(b), each side resampled on its own as above (what a
// plugin adds to a model's latency: a = with it, b = without). {0, 0} when either is empty.
Interval bootstrap_difference_ci(const std::vector<double>& a, const std::vector<double>& b, double confidence = 0.95,
                                 int resamples = kBootstrapResamples, uint64_t seed = kBootstrapSeed);

}  // namespace fb
