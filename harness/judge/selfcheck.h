// The A/A self-check: the same scenario run several times on one machine, every consecutive
// pair compared as `fusebench compare` would (with the runs before as history). Any
// `slower` or `faster` there is a false alarm, since nothing changed. Optionally, runs with
// a known slowdown injected (timing.inject_delay_us) alternate with the A/A runs, and each
// is compared against the A/A run just before it (with that run's history), as a nightly
// compares tonight with last night: the share called `slower` is the detection rate.
// Together they say what a nightly on this machine can and cannot see before anyone
// trusts it. With --paired every run is a paired A/B run of this binary against itself (or
// another build): the A/A comparison is each run's two sides, the slowed run's candidate
// side carries the slowdown.
#pragma once
#include <string>
#include <vector>

#include "harness/judge/compare.h"

namespace fb {

struct SelfCheckCase {
  std::string case_key, label;
  int comparisons = 0;          // A/A pairs judged
  int false_alarms = 0;         // of them, slower or faster
  int environment = 0, noisy = 0, unchanged = 0;
  double process_spread = 0;    // median over the runs of the speedup's spread between processes
  double run_spread_speedup = 0, run_spread_engine = 0;  // spread of the run-level values over the A/A runs
  double detectable = 0;        // median over the A/A pairs: the smallest speedup change that would count
  int injected = 0;             // comparisons of a slowed-down run against an A/A run
  int detected = 0;             // of them, slower
  int engine_detected = 0;      // of them, engine time judged slower on its own
};

// One judged comparison, as `selfcheck --verbose` lists it.
struct SelfCheckVerdict {
  int run = 0;          // the candidate run's place in the experiment, from 1
  bool slowed = false;  // a slowed run against the A/A run before it; else an A/A pair
  std::string label;
  Verdict verdict = Verdict::kNoisy;
  std::string reason;
};

struct SelfCheckReport {
  std::vector<SelfCheckCase> cases;
  std::vector<SelfCheckVerdict> verdicts;
  int comparisons = 0, false_alarms = 0;
  int injected = 0, detected = 0, engine_detected = 0;
  double false_alarm_rate() const { return comparisons ? double(false_alarms) / comparisons : 0; }
  double detection_rate() const { return injected ? double(detected) / injected : 0; }
};

// One run of the experiment: its cases, and whether it ran with the slowdown. A paired A/B
// run (selfcheck --paired) also holds its other side's cases, and is judged against them
// pair by pair (CompareOptions::paired), not against the run before.
struct SelfCheckRun {
  bool slowed = false;
  std::vector<StoredCase> cases;
  std::vector<StoredCase> paired_baseline{};
};

// `runs` in the order they ran. A slowed run before any A/A run is compared with nothing.
SelfCheckReport summarize_self_check(const std::vector<SelfCheckRun>& runs, const CompareOptions& options);

}  // namespace fb
