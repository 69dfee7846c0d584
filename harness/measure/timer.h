// Times two executors side by side on the same inputs: the cold first iteration of each
// kept apart, then warm-up by time and by count (on a device, until its clock settles),
// then timed iterations interleaved
// (engine, reference, engine, ...; or in blocks of timing.block_iterations each with
// timing.alternation "block") so that drift in the machine's state hits both alike.
// Stops when the stopping rule's 95% interval is narrow enough (TimingConfig::stop_rule:
// both medians, or the speedup), or at the time or iteration cap — then the result is
// flagged noisy rather than silently accepted. Around the timed phase it records what
// could have disturbed it (load, other processes' CPU time, CPU clock), and per iteration
// the page faults each executor took.
#pragma once
#include <functional>
#include <limits>
#include <string>

#include "harness/cases/case.h"
#include "harness/stats/bootstrap.h"

namespace fb {

// Warm-up until the device's clock settles: it goes on until two SM clock reads at least
// kSettleReadGapMs apart differ by under kSettleTolerance, or for kSettleCapMs more at most.
// A GPU raises its clock under load and may lower it as it heats: samples taken while it
// moves would time the ramp, not the code.
constexpr double kSettleReadGapMs = 50;
constexpr double kSettleTolerance = 0.01;
constexpr double kSettleCapMs = 3000;
struct ClockSettling {
  double ms = std::numeric_limits<double>::quiet_NaN();   // the extra warm-up; NaN: not tried
  double mhz = std::numeric_limits<double>::quiet_NaN();  // the clock read last
  bool settled = false;                                   // false: the cap ended it first
};

struct SideBySide {
  Measurement engine, reference;
  std::string stop_reason;  // "converged", "time-cap" or "iteration-cap"
  bool noisy = false;       // the stopping rule's target was not met when timing stopped
  Interval speedup_ci;      // 95% bootstrap interval of reference median / engine median
  double timer_overhead_ns = 0;
  Interference interference;
  std::string pinned_cpus;  // CpuPinning::describe of timing.pin_cpus
  ClockSettling settling;   // with a device's SM clock only
};

using ProgressFn = std::function<void(const std::string&)>;

// Where an executor's time comes from a device's own clock (a GPU's events), these return
// the last call's milliseconds by it; the host's clock then only paces the loop.
struct DeviceClocks {
  std::function<double()> engine, reference;
  // The device's SM clock now, in MHz (NaN: unknown). Set, warm-up goes on after its
  // configured time and count until the clock settles (ClockSettling).
  std::function<double()> sm_clock_mhz;
  // Called just before the timed phase starts and just after it ends (the device's
  // readings around it); either may be unset.
  std::function<void()> timed_phase_begins, timed_phase_ends;
};

SideBySide time_side_by_side(const std::function<void()>& engine, const std::function<void()>& reference,
                             const TimingConfig& timing, int64_t batch, const ProgressFn& progress = nullptr,
                             const DeviceClocks* clocks = nullptr);

// Moves the timing results into the case result (measurements, stop reason, noise flag,
// speedup interval, overhead, interference, pinning; the clock's settling into r.gpu).
void store_timing(SideBySide&& timed, CaseResult& r);

// The cost of what surrounds every sample: two clock reads around a call of an empty
// std::function, as the median of `reps` tries, in ns. Reported, not subtracted: it is
// tens of ns against samples of micro- to milliseconds, and subtracting a noisy estimate
// would add noise.
double measure_timer_overhead_ns(int reps = 2001);

// Whether the stopping rule's target is met on these samples (each executor's samples;
// sorted or not). "median-ci": both medians' relative CI half-widths <= target;
// "speedup-ci": the speedup's bootstrap interval half-width / speedup <= target.
bool stopping_rule_met(const std::vector<double>& engine_ms, const std::vector<double>& reference_ms,
                       const TimingConfig& timing, int bootstrap_resamples = kBootstrapResamples);

// The known stopping rules, for validation of scenario files.
bool is_stop_rule(const std::string& name);

}  // namespace fb
