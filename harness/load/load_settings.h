// How a case is loaded (issue 45): LoadGen's scenarios over a pool of engine instances.
// "single-stream" is the timing fusebench always did (engine and reference side by side,
// one inference at a time) and stays the default; the others serve the engine alone, from
// `instances` execution contexts sharing its weights, each on its own `threads` cores.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fb {

struct LoadSettings {
  // "single-stream", "multi-stream" (samples_per_query per query, the next query when all
  // are done), "server" (seeded Poisson arrivals at target_qps, each query within
  // latency_bound_ms) or "offline" (every query issued at once: throughput).
  std::string scenario = "single-stream";
  int instances = 1;              // engine execution contexts serving queries, each with the case's threads
  int samples_per_query = 8;      // multi-stream
  double target_qps = 0;          // server: the Poisson arrival rate (queries per second)
  double latency_bound_ms = 0;    // server: each query's bound
  // The percentile claimed and judged (0: LoadGen's, 0.90 for multi-stream... see percentile_of).
  double percentile = 0;
  double min_duration_ms = 1000;  // a run lasts at least this long...
  int64_t min_queries = 1024;     // ...and issues at least this many queries
  double max_duration_ms = 60000; // a server run that falls this far behind stops (invalid)
  uint64_t seed = 1;              // the arrival schedule's
  // Server: look for the highest rate whose claimed percentile stays within the bound, each
  // step a full run, every step stored (harness/load_peak.h).
  bool peak_search = false;
  // Pin instance i's threads to cores [i * threads, (i + 1) * threads) of the cores this
  // process may use, so instances never share one.
  bool pin = true;

  bool is_default() const { return scenario == "single-stream"; }
  bool operator==(const LoadSettings&) const = default;
};

// The load scenarios, in the order messages list them.
const std::vector<std::string>& load_scenarios();

// The percentile a scenario claims: the one given, else LoadGen's (single-stream 0.90,
// multi-stream and server 0.99; offline none: 0.99 for its figures).
double percentile_of(const LoadSettings& s);

}  // namespace fb
