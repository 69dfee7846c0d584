#include "harness/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>

#include "engine/ir/error.h"
#include "harness/statistics.h"

namespace fb {

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kFaster: return "faster";
    case Verdict::kSlower: return "slower";
    case Verdict::kUnchanged: return "unchanged";
    case Verdict::kNoisy: return "noisy";
  }
  return "?";
}

MannWhitney mann_whitney(const std::vector<double>& a, const std::vector<double>& b) {
  MannWhitney r;
  const size_t na = a.size(), nb = b.size(), n = na + nb;
  if (na == 0 || nb == 0) return r;
  // Pool, sort, and give tied values their mid-rank.
  std::vector<std::pair<double, bool>> pooled;  // value, from a
  pooled.reserve(n);
  for (double v : a) pooled.emplace_back(v, true);
  for (double v : b) pooled.emplace_back(v, false);
  std::sort(pooled.begin(), pooled.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  double rank_sum_a = 0, tie_term = 0;
  for (size_t i = 0; i < n;) {
    size_t j = i;
    while (j < n && pooled[j].first == pooled[i].first) ++j;
    const double mid_rank = (static_cast<double>(i + 1) + static_cast<double>(j)) / 2;  // 1-based ranks i+1..j
    for (size_t k = i; k < j; ++k)
      if (pooled[k].second) rank_sum_a += mid_rank;
    const double t = static_cast<double>(j - i);
    tie_term += t * t * t - t;
    i = j;
  }
  const double dna = static_cast<double>(na), dnb = static_cast<double>(nb), dn = static_cast<double>(n);
  r.u = rank_sum_a - dna * (dna + 1) / 2;
  const double mean = dna * dnb / 2;
  const double var = dna * dnb / 12 * ((dn + 1) - tie_term / (dn * (dn - 1)));
  if (!(var > 0)) return r;  // every value ties: no evidence of a difference
  const double diff = std::fabs(r.u - mean);
  r.z = (r.u > mean ? 1 : -1) * std::max(0.0, diff - 0.5) / std::sqrt(var);
  r.p = std::min(1.0, std::erfc(std::fabs(r.z) / std::sqrt(2.0)));  // 2 * (1 - Phi(|z|))
  return r;
}

SampleComparison compare_samples(const std::vector<double>& baseline, const std::vector<double>& candidate,
                                 const CompareOptions& o, bool flagged_noisy) {
  SampleComparison c;
  c.baseline_n = baseline.size();
  c.candidate_n = candidate.size();
  c.baseline_median = percentile(baseline, 0.5);
  c.candidate_median = percentile(candidate, 0.5);
  if (baseline.size() < 2 || candidate.size() < 2 || !(c.baseline_median > 0)) return c;  // noisy: cannot tell
  c.change = c.candidate_median / c.baseline_median - 1;
  const Interval ratio = bootstrap_ratio_ci(candidate, baseline);
  c.change_ci = {ratio.low - 1, ratio.high - 1};
  c.p_value = mann_whitney(candidate, baseline).p;
  if (c.p_value < o.alpha && std::fabs(c.change) >= o.min_effect)
    c.verdict = c.change > 0 ? Verdict::kSlower : Verdict::kFaster;
  else if (!flagged_noisy && c.change_ci.low > -o.min_effect && c.change_ci.high < o.min_effect)
    c.verdict = Verdict::kUnchanged;
  else
    c.verdict = Verdict::kNoisy;
  return c;
}

const std::vector<double>& samples_of(const CaseResult& r, const std::string& executor) {
  if (executor == "engine") return r.engine.samples_ms;
  if (executor == "reference") return r.reference.samples_ms;
  throw Error("unknown executor '" + executor + "' (expected engine or reference)");
}

std::vector<CaseComparison> compare_runs(const std::vector<StoredCase>& baseline,
                                         const std::vector<StoredCase>& candidate, const CompareOptions& o) {
  samples_of(CaseResult{}, o.executor);  // validates the executor name up front
  std::map<std::string, const CaseResult*> base_by_key;
  for (const StoredCase& sc : baseline) base_by_key[sc.result.spec.case_key()] = &sc.result;

  std::vector<CaseComparison> out;
  std::map<std::string, size_t> index_of;
  auto entry = [&](const CaseResult& r) -> CaseComparison& {
    const std::string key = r.spec.case_key();
    auto [it, fresh] = index_of.emplace(key, out.size());
    if (fresh) out.push_back(CaseComparison{key, r.spec.label(), {}, {}, {}, {}});
    return out[it->second];
  };
  for (const StoredCase& sc : candidate) entry(sc.result).candidate = sc.result;
  for (const StoredCase& sc : baseline) entry(sc.result).baseline = sc.result;

  for (CaseComparison& c : out) {
    if (!c.baseline) {
      c.note = "new: not in the baseline";
    } else if (!c.candidate) {
      c.note = "gone: only in the baseline";
      c.label = c.baseline->spec.label();
    } else if (c.candidate->status == "error") {
      c.note = "error in the candidate: " + c.candidate->error;
    } else if (c.baseline->status == "error") {
      c.note = "error in the baseline: " + c.baseline->error;
    } else {
      c.comparison = compare_samples(samples_of(*c.baseline, o.executor), samples_of(*c.candidate, o.executor), o,
                                     c.baseline->noisy || c.candidate->noisy);
    }
  }
  return out;
}

}  // namespace fb
