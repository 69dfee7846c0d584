// MLPerf LoadGen's early-stopping rule, in our own code: how many queries a run needs before
// it may claim a latency percentile, at 99% confidence. Each query is a Bernoulli trial that
// lands over the percentile's latency with probability 1 - p; a run of h queries under and t
// over may claim the p-quantile when seeing at most t over in h + t trials would happen with
// probability below 1 - confidence if the true quantile were above (a binomial tail).
// Published figures it reproduces (tests/test_load.cpp): 459 queries with none over for
// p99; 64 queries before a p90 claim and 662 before a p99 claim; 172 of 2048 queries
// discarded for the p90 estimate.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

namespace fb {

constexpr double kEarlyStoppingConfidence = 0.99;

// P(X <= over) for X ~ Binomial(under + over, 1 - p): the chance that a system whose
// p-quantile sits exactly at the line puts at most `over` of `under + over` queries over it.
double binomial_at_most(int64_t under, int64_t over, double p);

// The fewest queries under the line (h) that, with `over` queries over it, let a run claim
// the p-quantile at `confidence`: the least h with binomial_at_most(h, over, p) < 1 - confidence.
int64_t min_passing_queries(int64_t over, double p, double confidence = kEarlyStoppingConfidence);

// What a single-stream or multi-stream run may claim of its latency p-quantile: with n
// queries, the largest t with min_passing_queries(t) + t <= n; the claim is the latency of
// the t-th highest query (the t - 1 above it are discarded). `enough` is false below
// min_passing_queries(1) + 1 queries, which is then `needed`.
struct PercentileClaim {
  bool enough = false;
  int64_t needed = 0;     // queries any claim needs
  int64_t discarded = 0;  // highest latencies left out of the claim
  double latency = std::numeric_limits<double>::quiet_NaN();
};
PercentileClaim claim_percentile(std::vector<double> latencies, double p,
                                 double confidence = kEarlyStoppingConfidence);

// A server run's test: t queries over the latency bound (strictly), and it passes when the
// run issued at least min_passing_queries(t) + t queries; otherwise `more` says how many
// more it would need, every one of them under the bound.
struct OverBoundVerdict {
  int64_t over = 0;
  int64_t needed = 0;  // min_passing_queries(over) + over
  int64_t more = 0;    // needed - queries when short, else 0
  bool passed = false;
};
OverBoundVerdict over_bound_verdict(const std::vector<double>& latencies, double bound, double p,
                                    double confidence = kEarlyStoppingConfidence);

// The most queries over the bound that n queries can still pass with: the largest t with
// min_passing_queries(t) + t <= n (-1 when not even t = 0 passes). A server run may stop
// as soon as it sees more.
int64_t max_passing_over(int64_t n, double p, double confidence = kEarlyStoppingConfidence);

}  // namespace fb
