#include "harness/timer.h"

#include <algorithm>
#include <chrono>

#include "harness/statistics.h"

namespace fb {

namespace {
using Clock = std::chrono::steady_clock;

double time_once(const std::function<void()>& f) {
  const auto t0 = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double elapsed_ms(Clock::time_point since) { return std::chrono::duration<double, std::milli>(Clock::now() - since).count(); }

void finish(Measurement& m, int64_t batch) {
  m.stats = compute_stats(m.samples_ms);
  m.items_per_s = m.stats.median > 0 ? double(batch) * 1000.0 / m.stats.median : 0;
}
}  // namespace

SideBySide time_side_by_side(const std::function<void()>& engine, const std::function<void()>& reference,
                             const TimingConfig& t, int64_t batch, const ProgressFn& progress) {
  SideBySide r;
  r.engine.executor = "engine";
  r.reference.executor = "reference";
  r.engine.first_iteration_ms = time_once(engine);
  r.reference.first_iteration_ms = time_once(reference);

  const auto warm_start = Clock::now();
  for (int i = 0; i < t.warmup_iterations || elapsed_ms(warm_start) < t.warmup_ms; ++i) {
    engine();
    reference();
  }

  const auto start = Clock::now();
  auto last_progress = start;
  const double cap_ms = t.max_seconds * 2000.0;  // max_seconds per executor, both interleaved
  r.stop_reason = "iteration-cap";
  for (int i = 0; i < t.max_iterations; ++i) {
    r.engine.samples_ms.push_back(time_once(engine));
    r.reference.samples_ms.push_back(time_once(reference));
    const int n = i + 1;
    if (n >= t.min_iterations && (n % 5 == 0)) {
      std::vector<double> se = r.engine.samples_ms, sr = r.reference.samples_ms;
      std::sort(se.begin(), se.end());
      std::sort(sr.begin(), sr.end());
      if (median_rel_ci_halfwidth(se) <= t.target_rel_ci && median_rel_ci_halfwidth(sr) <= t.target_rel_ci) {
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
  finish(r.engine, batch);
  finish(r.reference, batch);
  return r;
}

}  // namespace fb
