#include "harness/measure/timer.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "engine/ir/error.h"
#include "harness/measure/cpu_pinning.h"
#include "harness/measure/interference.h"
#include "harness/stats/statistics.h"

namespace fb {

namespace {
using Clock = std::chrono::steady_clock;

// The stopping check runs its bootstrap with fewer resamples than the stored interval:
// it only has to tell "narrow enough" from "not yet", and it runs many times per case.
constexpr int kStopCheckResamples = 200;

double elapsed_ms(Clock::time_point since) { return std::chrono::duration<double, std::milli>(Clock::now() - since).count(); }

// Times one call and adds its page faults to `faults` (read outside the timed interval).
// With a device clock, the call's time is the device's (read after the call returned).
double time_once(const std::function<void()>& f, std::vector<FaultCounters>* faults = nullptr,
                 const std::function<double()>* device_clock = nullptr) {
  const FaultCounters f0 = faults ? read_fault_counters() : FaultCounters{};
  const auto t0 = Clock::now();
  f();
  const auto t1 = Clock::now();
  if (faults) {
    const FaultCounters f1 = read_fault_counters();
    faults->push_back({f1.minor - f0.minor, f1.major - f0.major});
  }
  if (device_clock && *device_clock) return (*device_clock)();
  return std::chrono::duration<double, std::milli>(t1 - t0).count();
}

FaultStats fault_stats(const std::vector<FaultCounters>& v, int64_t FaultCounters::*field) {
  FaultStats s;
  if (v.empty()) return s;
  s.min = std::numeric_limits<int64_t>::max();
  double sum = 0;
  for (const FaultCounters& c : v) {
    s.min = std::min(s.min, c.*field);
    s.max = std::max(s.max, c.*field);
    sum += static_cast<double>(c.*field);
  }
  s.mean = sum / static_cast<double>(v.size());
  return s;
}

void finish(Measurement& m, const std::vector<FaultCounters>& faults, int64_t batch) {
  m.stats = compute_stats(m.samples_ms);
  m.items_per_s = m.stats.median > 0 ? double(batch) * 1000.0 / m.stats.median : 0;
  m.minor_faults = fault_stats(faults, &FaultCounters::minor);
  m.major_faults = fault_stats(faults, &FaultCounters::major);
}

// Goes on running both executors until two reads of the clock at least kSettleReadGapMs
// apart differ by under kSettleTolerance, or kSettleCapMs have passed.
ClockSettling warm_until_clock_settles(const std::function<void()>& engine, const std::function<void()>& reference,
                                       const std::function<double()>& clock_mhz) {
  ClockSettling s;
  double last = clock_mhz();
  if (!std::isfinite(last)) return s;
  const auto start = Clock::now();
  auto last_at = start;
  s.ms = 0;
  s.mhz = last;
  while (elapsed_ms(start) < kSettleCapMs) {
    engine();
    reference();
    if (elapsed_ms(last_at) < kSettleReadGapMs) continue;
    const double now = clock_mhz();
    last_at = Clock::now();
    s.mhz = now;
    if (!std::isfinite(now)) break;
    if (std::fabs(now - last) < kSettleTolerance * last) {
      s.settled = true;
      break;
    }
    last = now;
  }
  s.ms = elapsed_ms(start);
  return s;
}

// Spins (no sleep: a sleeping thread would let the CPU clock down and change what follows).
void busy_wait_us(double us) {
  const auto until = Clock::now() + std::chrono::duration<double, std::micro>(us);
  while (Clock::now() < until) {
  }
}
}  // namespace

bool is_stop_rule(const std::string& name) { return name == "median-ci" || name == "speedup-ci"; }

bool stopping_rule_met(const std::vector<double>& engine_ms, const std::vector<double>& reference_ms,
                       const TimingConfig& t, int bootstrap_resamples) {
  if (t.stop_rule == "speedup-ci") {
    if (engine_ms.size() < 2 || reference_ms.size() < 2) return false;
    const double speedup = percentile(reference_ms, 0.5) / percentile(engine_ms, 0.5);
    if (!(speedup > 0) || !std::isfinite(speedup)) return false;
    const Interval ci = bootstrap_ratio_ci(reference_ms, engine_ms, 0.95, bootstrap_resamples);
    return (ci.high - ci.low) / 2 / speedup <= t.target_rel_ci;
  }
  FB_CHECK(t.stop_rule == "median-ci", "unknown stop rule '" + t.stop_rule + "'");
  return median_rel_ci_halfwidth(engine_ms) <= t.target_rel_ci &&
         median_rel_ci_halfwidth(reference_ms) <= t.target_rel_ci;
}

void store_timing(SideBySide&& timed, CaseResult& r) {
  r.engine = std::move(timed.engine);
  r.reference = std::move(timed.reference);
  r.stop_reason = std::move(timed.stop_reason);
  r.noisy = timed.noisy;
  r.speedup_ci_low = timed.speedup_ci.low;
  r.speedup_ci_high = timed.speedup_ci.high;
  r.timer_overhead_ns = timed.timer_overhead_ns;
  r.interference = timed.interference;
  r.pinned_cpus = std::move(timed.pinned_cpus);
  if (r.gpu) {
    r.gpu->settle_ms = timed.settling.ms;
    r.gpu->settled_sm_mhz = timed.settling.mhz;
    r.gpu->settled = timed.settling.settled;
  }
}

double measure_timer_overhead_ns(int reps) {
  const std::function<void()> empty = [] {};
  std::vector<double> ns(static_cast<size_t>(std::max(reps, 1)));
  for (double& v : ns) {
    const auto t0 = Clock::now();
    empty();
    v = std::chrono::duration<double, std::nano>(Clock::now() - t0).count();
  }
  return percentile(ns, 0.5);
}

SideBySide time_side_by_side(const std::function<void()>& engine_fn, const std::function<void()>& reference,
                             const TimingConfig& t, int64_t batch, const ProgressFn& progress, const DeviceClocks* clocks) {
  if (!is_stop_rule(t.stop_rule))
    throw Error("timing.stop_rule: unknown rule '" + t.stop_rule + "' (known: median-ci, speedup-ci)");
  if (t.alternation != "iteration" && t.alternation != "block")
    throw Error("timing.alternation: unknown mode '" + t.alternation + "' (known: iteration, block)");
  if (t.block_iterations < 1) throw Error("timing.block_iterations must be at least 1");
  SideBySide r;
  r.engine.executor = "engine";
  r.reference.executor = "reference";
  // Pinned from the cold iteration on, so every figure is taken under the same conditions.
  CpuPinning pinning(t.pin_cpus);
  r.pinned_cpus = CpuPinning::describe(t.pin_cpus);

  std::function<void()> engine = engine_fn;
  // The wait comes before the engine, so the reference still starts as the engine ends, as
  // in a run without it. With the wait after the engine, the quickstart's b=1 reference ran
  // 1.7-3.7% slower in slowed runs than in A/A runs (its pool idling first, we think), and
  // the slowdown leaked out of the engine's share.
  if (t.inject_delay_us > 0) engine = [&engine_fn, us = t.inject_delay_us] { busy_wait_us(us); engine_fn(); };
  // The previous run's own time, so the wait scales with the machine as more work would.
  if (t.inject_slowdown > 0)
    engine = [&engine_fn, f = t.inject_slowdown, last_us = 0.0]() mutable {
      busy_wait_us(f * last_us);
      const auto start = Clock::now();
      engine_fn();
      last_us = std::chrono::duration<double, std::micro>(Clock::now() - start).count();
    };

  r.timer_overhead_ns = measure_timer_overhead_ns();
  const std::function<double()>* engine_clock = clocks ? &clocks->engine : nullptr;
  const std::function<double()>* reference_clock = clocks ? &clocks->reference : nullptr;
  r.engine.first_iteration_ms = time_once(engine, nullptr, engine_clock);
  r.reference.first_iteration_ms = time_once(reference, nullptr, reference_clock);

  const auto warm_start = Clock::now();
  for (int i = 0; i < t.warmup_iterations || elapsed_ms(warm_start) < t.warmup_ms; ++i) {
    engine();
    reference();
  }
  if (clocks && clocks->sm_clock_mhz) r.settling = warm_until_clock_settles(engine, reference, clocks->sm_clock_mhz);

  if (clocks && clocks->timed_phase_begins) clocks->timed_phase_begins();
  const SystemSnapshot before = take_system_snapshot(t.pin_cpus);
  const auto start = Clock::now();
  auto last_progress = start;
  const double cap_ms = t.max_seconds * 2000.0;  // max_seconds per executor, both interleaved
  std::vector<FaultCounters> engine_faults, reference_faults;
  // The speedup rule bootstraps, so it is checked at growing intervals (every 10% more
  // samples); the order-statistic rule is cheap and checked every 5 iterations. Neither
  // is asked before process_samples: the time cap alone may stop the timing earlier.
  int next_check = std::max(t.min_iterations, t.process_samples);
  r.stop_reason = "iteration-cap";
  // Per-iteration alternation is a block of one.
  const int block = t.alternation == "block" ? t.block_iterations : 1;
  for (int i = 0; i < t.max_iterations; i += block) {
    const int b = std::min(block, t.max_iterations - i);
    for (int k = 0; k < b; ++k) r.engine.samples_ms.push_back(time_once(engine, &engine_faults, engine_clock));
    for (int k = 0; k < b; ++k) r.reference.samples_ms.push_back(time_once(reference, &reference_faults, reference_clock));
    const int n = i + b;
    if (n >= next_check) {
      next_check = t.stop_rule == "speedup-ci" ? std::max(n + 5, n + n / 10) : n + 5;
      if (stopping_rule_met(r.engine.samples_ms, r.reference.samples_ms, t, kStopCheckResamples)) {
        r.stop_reason = "converged";
        break;
      }
    }
    if (n >= t.min_iterations && elapsed_ms(start) >= cap_ms) {
      r.stop_reason = "time-cap";
      break;
    }
    if (progress && elapsed_ms(last_progress) > 250) {
      last_progress = Clock::now();
      progress(std::to_string(n) + " iterations, " + std::to_string(int(elapsed_ms(start) / 1000)) + " s");
    }
  }
  r.interference = interference_between(before, take_system_snapshot(t.pin_cpus));
  if (clocks && clocks->timed_phase_ends) clocks->timed_phase_ends();

  finish(r.engine, engine_faults, batch);
  finish(r.reference, reference_faults, batch);
  r.speedup_ci = bootstrap_ratio_ci(r.reference.samples_ms, r.engine.samples_ms);
  // A cap may have come between two checks with the target already met: judge the final
  // samples, with the full bootstrap, rather than the last check: noisy means the interval
  // missed its target, whatever ended the timing (stop_reason says what did).
  r.noisy = r.stop_reason != "converged" && !stopping_rule_met(r.engine.samples_ms, r.reference.samples_ms, t);
  return r;
}

}  // namespace fb
