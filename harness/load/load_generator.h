// The issue/serve loop of a load run (harness/load/load_settings.h): queries issued on a
// schedule (seeded Poisson arrivals for server, all at once for offline) or as the previous
// query completes (single- and multi-stream), served first come first served by a pool of
// instances, one serving thread each. There is no dispatcher thread: a serving thread that
// is free takes the next sample (one atomic add), waits for its issue time if that lies
// ahead (sleeping, then spinning the last stretch on its own idle core), runs it and
// writes its three times into a preallocated record. Whichever thread is free first gets
// the next query, which is exactly an M/D/c queue's discipline.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "harness/load/load_settings.h"

namespace fb {

// One served sample. Times in ns from the run's start (its first issue); -1: never served
// (the run stopped first).
struct LoadSample {
  int64_t query = 0;
  int64_t issue_ns = 0;  // when it was due: its scheduled arrival, or its query's issue
  int64_t start_ns = -1, end_ns = -1;
  int32_t instance = -1;
  bool queued = false;   // its server was busy at issue_ns (it waited in the queue)
  bool operator==(const LoadSample&) const = default;
};

struct LoadRun {
  std::vector<LoadSample> samples;  // in issue order
  int64_t queries = 0;              // queries issued (each of samples_per_query samples in multi-stream)
  std::string stopped;              // why it stopped before serving every query ("" when it did not)
};

// What serves one sample on the calling thread, and how its serving thread is set up.
struct LoadInstance {
  std::function<void()> infer;
  // Runs `serve` (the thread's whole loop) inside what the instance's inferences need: its
  // thread pools, its pinning. nullptr: runs it directly.
  std::function<void(const std::function<void()>& serve)> scope;
};

// Arrival times (ns from the first) of a Poisson process at `qps` per second, from
// Rng(seed): gaps of -ln(1 - U) / qps. As many as it takes for at least `min_queries`
// arrivals and the last at or after `min_duration_ns`; the first arrives at 0. The same
// seed gives the same schedule on every machine (harness/stats/random.h).
std::vector<int64_t> poisson_arrivals(double qps, uint64_t seed, int64_t min_queries, int64_t min_duration_ns);

// Runs the load on the instances. Server: `schedule` gives each query's arrival (ns);
// offline: every one of `schedule.size()` queries at 0; single-/multi-stream: queries are
// issued until both min_queries and min_duration_ms are met. A server run stops when it
// falls max_duration_ms behind, or (over_bound_limit >= 0) once more than that many
// queries finished over latency_bound_ms, which no run of this length can pass.
LoadRun run_load(const LoadSettings& s, std::vector<LoadInstance>& instances, const std::vector<int64_t>& schedule,
                 int64_t over_bound_limit = -1);

// The loop's own cost per query, in ns: the mean time per sample of an offline run of
// `queries` samples on one instance that does nothing (the atomic add, two clock reads,
// the record), measured here and now.
double measure_load_overhead_ns(int64_t queries = 20000);

// Monotonic nanoseconds (CLOCK_MONOTONIC), the loop's clock.
int64_t monotonic_ns();

}  // namespace fb
