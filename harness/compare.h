// Comparing a run against a baseline, case by case: the change in the median with its
// bootstrap interval, and a verdict from a Mann–Whitney U test together with a minimum
// effect size — significance alone would flag a 0.1% change on a long run, effect size
// alone would flag noise on a short one. Cases are matched by case key, so a renamed
// scenario file or a reordered matrix still compares.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/bootstrap.h"
#include "harness/result_store.h"

namespace fb {

struct CompareOptions {
  double alpha = 0.01;          // two-sided significance level of the Mann–Whitney test
  double min_effect = 0.02;     // a change of the median smaller than this (2%) is "unchanged"
  std::string executor = "engine";  // whose samples are compared: "engine" or "reference"
};

enum class Verdict { kFaster, kSlower, kUnchanged, kNoisy };
const char* verdict_name(Verdict v);  // "faster", "slower", "unchanged", "noisy"

// The Mann–Whitney U test of two samples, two-sided, by the normal approximation with the
// tie correction and a continuity correction (good from about 10 samples a side; the timer
// keeps at least min_iterations). u is the U statistic of `a`. p = 1 when every value ties
// or a side is empty.
struct MannWhitney {
  double u = 0;
  double z = 0;
  double p = 1;
};
MannWhitney mann_whitney(const std::vector<double>& a, const std::vector<double>& b);

struct SampleComparison {
  size_t baseline_n = 0, candidate_n = 0;
  double baseline_median = 0, candidate_median = 0;
  double change = 0;    // candidate median / baseline median - 1 (+0.05: 5% slower)
  Interval change_ci;   // 95% bootstrap interval of the change
  double p_value = 1;
  Verdict verdict = Verdict::kNoisy;
};

// The verdict: faster or slower when p < alpha and |change| >= min_effect; otherwise
// unchanged when the change's interval lies within ±min_effect and neither side was flagged
// noisy; otherwise noisy (the data cannot tell). Fewer than 2 samples a side is noisy.
SampleComparison compare_samples(const std::vector<double>& baseline, const std::vector<double>& candidate,
                                 const CompareOptions& options, bool flagged_noisy = false);

// One case key's comparison. `comparison` is empty when the case is missing on a side or
// errored there; `note` then says which.
struct CaseComparison {
  std::string case_key;
  std::string label;
  std::optional<CaseResult> baseline, candidate;
  std::optional<SampleComparison> comparison;
  std::string note;
};

// Every case key of either run, in the candidate's order, then baseline-only ones. A key
// stored twice in one run (a scenario listed twice) compares its last result.
std::vector<CaseComparison> compare_runs(const std::vector<StoredCase>& baseline,
                                         const std::vector<StoredCase>& candidate, const CompareOptions& options);

// The samples of `executor` ("engine" or "reference") in a result; fb::Error otherwise.
const std::vector<double>& samples_of(const CaseResult& r, const std::string& executor);

}  // namespace fb
