#include "harness/load/load_early_stopping.h"

#include <algorithm>
#include <cmath>

#include "engine/ir/error.h"

namespace fb {

double binomial_at_most(int64_t under, int64_t over, double p) {
  // Sum of C(n, x) q^x p^(n-x) for x = 0..over, q = 1 - p, n = under + over, in logs: the
  // terms underflow a double long before the sum does (0.99^100000).
  const int64_t n = under + over;
  const double log_p = std::log(p), log_q = std::log1p(-p);
  double log_term = double(n) * log_p;  // x = 0
  double log_sum = log_term;
  for (int64_t x = 0; x < over; ++x) {
    log_term += std::log(double(n - x)) - std::log(double(x + 1)) + log_q - log_p;
    const double hi = std::max(log_sum, log_term), lo = std::min(log_sum, log_term);
    log_sum = hi + std::log1p(std::exp(lo - hi));
  }
  return std::exp(log_sum);
}

namespace {
// The least x > 0 where `holds` (false, then true, as x grows) holds: bracketed by doubling,
// then bisected. The search has to end: `holds` must become true.
template <class Pred>
int64_t least_where(Pred holds) {
  int64_t lo = 0, hi = 1;
  while (!holds(hi)) {
    lo = hi;
    hi *= 2;
  }
  while (hi - lo > 1) {
    const int64_t mid = lo + (hi - lo) / 2;
    (holds(mid) ? hi : lo) = mid;
  }
  return hi;
}
}  // namespace

int64_t min_passing_queries(int64_t over, double p, double confidence) {
  if (!(p > 0 && p < 1) || !(confidence > 0 && confidence < 1) || over < 0)
    throw Error("early stopping: percentile and confidence must lie in (0, 1)");
  // The chance of so few over falls as the queries under the line grow.
  return least_where([&](int64_t h) { return binomial_at_most(h, over, p) < 1 - confidence; });
}

int64_t max_passing_over(int64_t n, double p, double confidence) {
  // min_passing_queries(t) + t grows with t: the first t that no longer fits, less one.
  auto fits = [&](int64_t t) { return min_passing_queries(t, p, confidence) + t <= n; };
  if (!fits(0)) return -1;
  return least_where([&](int64_t t) { return !fits(t); }) - 1;
}

PercentileClaim claim_percentile(std::vector<double> latencies, double p, double confidence) {
  PercentileClaim c;
  const int64_t n = int64_t(latencies.size());
  c.needed = min_passing_queries(1, p, confidence) + 1;
  if (n < c.needed) return c;
  c.enough = true;
  const int64_t t = std::max<int64_t>(1, max_passing_over(n, p, confidence));
  std::sort(latencies.begin(), latencies.end());
  c.discarded = t - 1;
  c.latency = latencies[size_t(n - t)];
  return c;
}

OverBoundVerdict over_bound_verdict(const std::vector<double>& latencies, double bound, double p, double confidence) {
  OverBoundVerdict v;
  v.over = std::count_if(latencies.begin(), latencies.end(), [&](double l) { return l > bound; });
  v.needed = min_passing_queries(v.over, p, confidence) + v.over;
  const int64_t n = int64_t(latencies.size());
  v.passed = n >= v.needed;
  v.more = v.passed ? 0 : v.needed - n;
  return v;
}

}  // namespace fb
