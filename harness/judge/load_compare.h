// How a load case moved between two runs (compare, and gate's max_regression through it):
// its claimed percentile and its median per query, each the ratio of the two runs' values
// with a seeded bootstrap interval over their query latencies, and whether it stayed valid.
// A run that lost its validity is slower whatever its percentiles say; one that gained it,
// faster.
#pragma once
#include <optional>
#include <string>

#include "harness/cases/case.h"
#include "harness/stats/bootstrap.h"

namespace fb {

struct LoadQuantileChange {
  double baseline = 0, candidate = 0;  // ms
  double change = 0;                   // candidate / baseline - 1
  Interval change_ci;                  // (1 - alpha) bootstrap interval of it; {0, 0} without samples
};

struct LoadJudgement {
  double percentile = 0.99;            // the claimed one (the candidate's)
  LoadQuantileChange median, tail;     // p50, and the claimed percentile's plain value
  bool baseline_valid = false, candidate_valid = false;
  double baseline_peak_qps = 0, candidate_peak_qps = 0;  // NaN when no peak was found or searched
  // "slower", "faster", "unchanged" or "noisy" (verdict_name's words) and why, in one line.
  std::string verdict;
  std::string reason;
};

// The interval of quantile_q(a) / quantile_q(b) - 1 by a seeded percentile bootstrap, each
// side resampled on its own (the two runs' queries are independent). {0, 0} when either
// side is empty.
Interval bootstrap_quantile_change_ci(const std::vector<double>& a, const std::vector<double>& b, double q,
                                      double confidence, int resamples = kBootstrapResamples,
                                      uint64_t seed = kBootstrapSeed);

// Judges two results of a load case (reported steps, harness/load/load_figures.h). A change
// counts when its interval at `alpha` excludes 0 and it is at least `min_effect`; an
// interval that reaches past min_effect either way without excluding 0 is noisy.
LoadJudgement judge_load(const CaseResult& baseline, const CaseResult& candidate, double alpha, double min_effect);

}  // namespace fb
