// A load run's figures as LoadGen reports them: latency percentiles per query, the
// percentile the run may claim (early stopping, harness/load/load_early_stopping.h), queries
// and samples per second, and whether the run is valid: every query served, the minimum
// duration and query count met, early stopping satisfied and, for server, the claimed
// percentile's plain value within the latency bound.
#pragma once
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "harness/load/load_generator.h"
#include "harness/load/load_settings.h"

namespace fb {

struct LoadFigures {
  std::string scenario;
  double target_qps = 0;        // server: the arrival rate asked for
  double latency_bound_ms = 0;  // server
  double percentile = 0;        // the one claimed (percentile_of)
  int instances = 1, threads = 1;
  int64_t queries = 0, samples = 0, served = 0;  // issued queries and samples; samples served
  // LoadGen's duration: a server run's last scheduled arrival, a single-/multi-stream run's
  // last issue, an offline run's last completion (ms from the first issue).
  double duration_ms = 0;
  double qps = 0;             // queries completed per second, first issue to last completion
  double samples_per_s = 0;   // the same in samples (offline's throughput)
  // Per query: from its issue to its last sample's end (ms).
  double p50_ms = 0, p90_ms = 0, p99_ms = 0, mean_ms = 0, max_ms = 0;
  double percentile_ms = 0;   // the claimed percentile's plain value
  // Early stopping's estimate of the percentile (NaN when too few queries ran), the queries
  // it discarded, and the queries any claim needs.
  double claimed_ms = std::numeric_limits<double>::quiet_NaN();
  int64_t claim_discarded = 0, claim_needed = 0;
  int64_t over_bound = 0;      // server: queries over the latency bound
  int64_t needed_queries = 0;  // server: what early stopping needs with that many over
  // Start minus issue of the queries that found their server idle (µs): the loop's wake-up,
  // what a query waits with nothing queued. NaN when none did.
  double dispatch_p50_us = std::numeric_limits<double>::quiet_NaN();
  double dispatch_p99_us = std::numeric_limits<double>::quiet_NaN();
  double overhead_ns = 0;      // the loop's own cost per query (measure_load_overhead_ns), measured before the run
  bool valid = false;
  std::string invalid;         // why not, "; "-separated ("" when valid)

  bool operator==(const LoadFigures&) const = default;
};

LoadFigures load_figures(const LoadSettings& s, int threads, const LoadRun& run);

// Each served query's latency (ms): from its issue to its last sample's end, in query
// order; a query with a sample never served is left out.
std::vector<double> query_latencies_ms(const std::vector<LoadSample>& samples);

// One load run of a case: its figures and every sample's times.
struct LoadStep {
  LoadFigures figures;
  std::vector<LoadSample> samples;
  bool operator==(const LoadStep&) const = default;
};

// A case's load: one step, or a server peak search's steps in the order run, with the
// highest rate whose run was valid (NaN when none was).
struct LoadResult {
  std::vector<LoadStep> steps;
  double peak_qps = std::numeric_limits<double>::quiet_NaN();
  bool operator==(const LoadResult&) const = default;
};

// The step a case reports: a peak search's at its peak (else its last), or the only one.
const LoadStep& reported_step(const LoadResult& r);

// "server 200 qps: p50 4.1 ms p90 6.0 p99 9.2 (claimed p99 9.5 ms), 2100 queries, 199.8 qps, VALID"
std::string load_line(const LoadFigures& f);

}  // namespace fb
