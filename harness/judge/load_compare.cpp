#include "harness/judge/load_compare.h"

#include <algorithm>
#include <cmath>

#include "harness/load/load_figures.h"
#include "harness/stats/random.h"
#include "harness/stats/statistics.h"
#include "harness/util/format_number.h"

namespace fb {

Interval bootstrap_quantile_change_ci(const std::vector<double>& a, const std::vector<double>& b, double q,
                                      double confidence, int resamples, uint64_t seed) {
  if (a.empty() || b.empty()) return {0, 0};
  Rng rng(seed);
  std::vector<double> ratios, ra(a.size()), rb(b.size());
  ratios.reserve(size_t(resamples));
  for (int i = 0; i < resamples; ++i) {
    for (double& x : ra) x = a[rng.below(a.size())];
    for (double& x : rb) x = b[rng.below(b.size())];
    const double qb = percentile(rb, q);
    if (qb > 0) ratios.push_back(percentile(ra, q) / qb - 1);
  }
  if (ratios.empty()) return {0, 0};
  std::sort(ratios.begin(), ratios.end());
  const double tail = (1 - confidence) / 2;
  return {percentile(ratios, tail), percentile(ratios, 1 - tail)};
}

namespace {

LoadQuantileChange quantile_change(const std::vector<double>& base, const std::vector<double>& cand, double base_ms,
                                   double cand_ms, double q, double alpha) {
  LoadQuantileChange c{base_ms, cand_ms, base_ms > 0 ? cand_ms / base_ms - 1 : 0, {0, 0}};
  // Resampling tens of thousands of queries a thousand times costs seconds: 200 resamples
  // place a 99% interval's ends well within the change a comparison must see.
  c.change_ci = bootstrap_quantile_change_ci(cand, base, q, 1 - alpha, 200);
  return c;
}

}  // namespace

LoadJudgement judge_load(const CaseResult& baseline, const CaseResult& candidate, double alpha, double min_effect) {
  LoadJudgement j;
  const LoadStep& b = reported_step(*baseline.load);
  const LoadStep& c = reported_step(*candidate.load);
  j.percentile = c.figures.percentile;
  const std::vector<double> bl = query_latencies_ms(b.samples), cl = query_latencies_ms(c.samples);
  j.median = quantile_change(bl, cl, b.figures.p50_ms, c.figures.p50_ms, 0.5, alpha);
  j.tail = quantile_change(bl, cl, b.figures.percentile_ms, c.figures.percentile_ms, j.percentile, alpha);
  j.baseline_valid = b.figures.valid;
  j.candidate_valid = c.figures.valid;
  j.baseline_peak_qps = baseline.load->peak_qps;
  j.candidate_peak_qps = candidate.load->peak_qps;
  const std::string pct = "p" + format_number("%g", 100 * j.percentile);
  if (j.baseline_valid != j.candidate_valid) {
    j.verdict = j.candidate_valid ? "faster" : "slower";
    j.reason = j.candidate_valid ? "the load run became valid" : "the load run lost its validity: " + c.figures.invalid;
    return j;
  }
  const Interval ci = j.tail.change_ci;
  const bool known = !(ci.low == 0 && ci.high == 0);
  const std::string change = pct + " " + format_number("%+.1f%%", 100 * j.tail.change) +
                             (known ? " [" + format_number("%+.1f%%", 100 * ci.low) + ", " + format_number("%+.1f%%", 100 * ci.high) + "]" : "");
  if (!known) {
    j.verdict = "noisy";
    j.reason = change + ": no query latencies stored to bound it";
  } else if (ci.low > 0 && j.tail.change >= min_effect) {
    j.verdict = "slower";
    j.reason = change + " beyond its interval";
  } else if (ci.high < 0 && j.tail.change <= -min_effect) {
    j.verdict = "faster";
    j.reason = change + " beyond its interval";
  } else if (ci.low > -min_effect && ci.high < min_effect) {
    j.verdict = "unchanged";
    j.reason = change + " within ±" + format_number("%.1f%%", 100 * min_effect);
  } else {
    j.verdict = "noisy";
    j.reason = change + ": its interval is wider than ±" + format_number("%.1f%%", 100 * min_effect);
  }
  return j;
}

}  // namespace fb
