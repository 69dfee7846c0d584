// The side-by-side timer on synthetic workloads: what it records (samples, cold iteration,
// page faults, timer overhead, interference, pinning), the stopping rules on fixed samples,
// the noisy flag, and the inject_delay_us test hook. Durations are asserted only as lower
// bounds of a busy wait, never as speeds.
#include "harness/measure/interference.h"
#include "harness/measure/timer.h"

#include <gtest/gtest.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cmath>

#include "engine/ir/error.h"
#include "harness/measure/cpu_pinning.h"
#include "harness/stats/random.h"

namespace {

void spin_us(double us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::micro>(us);
  while (std::chrono::steady_clock::now() < until) {
  }
}

fb::TimingConfig quick() {
  fb::TimingConfig t;
  t.warmup_ms = 1;
  t.warmup_iterations = 2;
  t.min_iterations = 20;
  t.max_iterations = 40;
  t.max_seconds = 5;
  t.target_rel_ci = 0.5;  // loose: converges at min_iterations...
  t.process_samples = 1;  // ...where the stopping rule is first asked
  return t;
}

// The stopping rule is not asked before process_samples: a loose target still takes that
// many samples, unless max_iterations comes first.
TEST(Timer, TakesProcessSamplesBeforeTheStoppingRuleIsAsked) {
  fb::TimingConfig t = quick();
  t.process_samples = 30;
  fb::SideBySide r = fb::time_side_by_side([] {}, [] { spin_us(5); }, t, 1);
  EXPECT_EQ(r.stop_reason, "converged");
  EXPECT_EQ(r.engine.samples_ms.size(), 30u);
  t.process_samples = 50;  // beyond max_iterations (40)
  r = fb::time_side_by_side([] {}, [] { spin_us(5); }, t, 1);
  EXPECT_EQ(r.stop_reason, "iteration-cap");
  EXPECT_EQ(r.engine.samples_ms.size(), 40u);
}

TEST(Timer, RecordsSamplesFaultsAndTheMachineState) {
  // The engine maps and touches 16 fresh pages per run: at least 16 minor faults each time.
  const long page = sysconf(_SC_PAGESIZE);
  auto engine = [&] {
    void* p = mmap(nullptr, 16 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(p, MAP_FAILED);
    for (int i = 0; i < 16; ++i) static_cast<volatile char*>(p)[i * page] = 1;
    munmap(p, 16 * page);
  };
  auto reference = [] { spin_us(50); };
  fb::SideBySide r = fb::time_side_by_side(engine, reference, quick(), 4);
  EXPECT_EQ(r.stop_reason, "converged");
  EXPECT_FALSE(r.noisy);
  EXPECT_EQ(r.engine.samples_ms.size(), 20u);
  EXPECT_EQ(r.reference.samples_ms.size(), 20u);
  EXPECT_EQ(r.engine.stats.n, 20u);
  EXPECT_GE(r.engine.minor_faults.min, 16);
  EXPECT_GE(r.engine.minor_faults.mean, 16);
  EXPECT_GE(r.engine.minor_faults.max, r.engine.minor_faults.min);
  EXPECT_EQ(r.reference.minor_faults.min, 0);  // spinning touches no new page...
  EXPECT_LT(r.reference.minor_faults.mean, 16);  // ...give or take an interrupt's worth
  EXPECT_GE(r.reference.stats.min, 0.05);  // 50 µs spin: a lower bound only
  EXPECT_GE(r.reference.first_iteration_ms, 0.05);
  EXPECT_NEAR(r.reference.items_per_s, 4 * 1000 / r.reference.stats.median, 1e-6);
  // Overhead: positive and far below a millisecond on any machine that can run this.
  EXPECT_GT(r.timer_overhead_ns, 0);
  EXPECT_LT(r.timer_overhead_ns, 1e6);
  // Interference was read: the timed phase lasted at least 20 · 50 µs.
  EXPECT_GE(r.interference.timed_wall_ms, 1.0);
  EXPECT_GE(r.interference.other_cpu_ms, 0);
  EXPECT_TRUE(std::isnan(r.interference.load_before) || r.interference.load_before >= 0);
  EXPECT_TRUE(std::isnan(r.interference.cpu_mhz_before) || r.interference.cpu_mhz_before > 0);
  // Speedup interval brackets reference / engine medians.
  const double speedup = r.reference.stats.median / r.engine.stats.median;
  EXPECT_LE(r.speedup_ci.low, speedup * 1.0000001);
  EXPECT_GE(r.speedup_ci.high, speedup * 0.9999999);
  EXPECT_EQ(r.pinned_cpus, "");
}

TEST(Timer, TimeCapBeforeTheTargetIsFlaggedNoisy) {
  fb::TimingConfig t = quick();
  t.target_rel_ci = 1e-9;  // unreachable
  t.max_iterations = 1000000;
  t.max_seconds = 0.02;
  fb::Rng rng(1);
  auto jittery = [&] { spin_us(5 + 20 * rng.uniform()); };
  fb::SideBySide r = fb::time_side_by_side(jittery, jittery, t, 1);
  EXPECT_EQ(r.stop_reason, "time-cap");
  EXPECT_TRUE(r.noisy);
  EXPECT_GE(r.engine.samples_ms.size(), 20u);  // min_iterations are always kept
  // The iteration cap without the target met is noisy too.
  t.max_iterations = 25;
  t.max_seconds = 100;
  fb::SideBySide capped = fb::time_side_by_side(jittery, jittery, t, 1);
  EXPECT_EQ(capped.stop_reason, "iteration-cap");
  EXPECT_TRUE(capped.noisy);
}

TEST(Timer, InjectedDelayIsAddedToTheEngineOnly) {
  fb::TimingConfig t = quick();
  t.inject_delay_us = 300;
  auto nothing = [] {};
  fb::SideBySide r = fb::time_side_by_side(nothing, nothing, t, 1);
  EXPECT_GE(r.engine.stats.min, 0.3);
  EXPECT_GE(r.engine.first_iteration_ms, 0.3);
  EXPECT_LT(r.reference.stats.min, 0.3);
}

TEST(Timer, PinsToTheGivenCpusAndRestores) {
  cpu_set_t before;
  ASSERT_EQ(sched_getaffinity(0, sizeof before, &before), 0);
  int first = -1;
  for (int c = 0; c < CPU_SETSIZE && first < 0; ++c)
    if (CPU_ISSET(c, &before)) first = c;
  ASSERT_GE(first, 0);
  fb::TimingConfig t = quick();
  t.pin_cpus = {first};
  int cpus_seen = -1;
  auto probe = [&] {
    cpu_set_t now;
    sched_getaffinity(0, sizeof now, &now);
    cpus_seen = CPU_COUNT(&now);
  };
  fb::SideBySide r = fb::time_side_by_side(probe, probe, t, 1);
  EXPECT_EQ(r.pinned_cpus, std::to_string(first));
  EXPECT_EQ(cpus_seen, 1);
  cpu_set_t after;
  ASSERT_EQ(sched_getaffinity(0, sizeof after, &after), 0);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
  // A CPU that does not exist is an error naming the field.
  t.pin_cpus = {CPU_SETSIZE - 1};
  try {
    fb::time_side_by_side(probe, probe, t, 1);
    ADD_FAILURE() << "pinning to CPU " << CPU_SETSIZE - 1 << " should fail";
  } catch (const fb::Error& e) {
    EXPECT_NE(std::string(e.what()).find("timing.pin_cpus"), std::string::npos) << e.what();
  }
  sched_getaffinity(0, sizeof after, &after);
  EXPECT_TRUE(CPU_EQUAL(&before, &after));
}

TEST(StoppingRule, MedianAndSpeedupRulesOnFixedSamples) {
  fb::Rng rng(4);
  std::vector<double> tight(200), loose(200);
  for (double& v : tight) v = 1.0 + 0.001 * rng.normal();
  for (double& v : loose) v = 2.0 * (1 + 0.2 * rng.normal());
  fb::TimingConfig t;
  t.target_rel_ci = 0.01;
  EXPECT_TRUE(fb::stopping_rule_met(tight, tight, t));
  EXPECT_FALSE(fb::stopping_rule_met(tight, loose, t));  // the loose median's CI is ~±3%
  t.stop_rule = "speedup-ci";
  EXPECT_TRUE(fb::stopping_rule_met(tight, tight, t));
  EXPECT_FALSE(fb::stopping_rule_met(tight, loose, t));
  t.target_rel_ci = 0.05;  // the speedup's interval is about ±3.5%: met at 5%
  EXPECT_TRUE(fb::stopping_rule_met(tight, loose, t));
  EXPECT_FALSE(fb::stopping_rule_met({1.0}, {1.0}, t));
  EXPECT_TRUE(fb::is_stop_rule("median-ci"));
  EXPECT_FALSE(fb::is_stop_rule("mean"));
  t.stop_rule = "mean";
  EXPECT_THROW(fb::time_side_by_side([] {}, [] {}, t, 1), fb::Error);
}

TEST(TimerOverhead, IsMeasured) {
  const double ns = fb::measure_timer_overhead_ns(101);
  EXPECT_GT(ns, 0);
  EXPECT_LT(ns, 1e6);
}

// When a timing counts as disturbed, with the figures that made it so.
TEST(Disturbance, ThreadsBeyondTheFreeCoresOrStealTime) {
  fb::TimingConfig t;  // disturbance_cpus 0.25, disturbance_steal 0.05
  fb::Interference i;
  // Figures beyond the clock ticks /proc/stat may have miscounted (a tick per CPU at each end).
  const double ticks_ms = 2 * 1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK)) * 2;
  i.timed_wall_ms = 1000;
  i.other_cpu_ms = 200 + ticks_ms;  // 0.2 CPUs of 2: 1.8 free, within 0.25 of 2 threads
  i.run_queue = 3;
  i.involuntary_switches = 40;
  EXPECT_EQ(fb::disturbance_of(i, 2, 2, t), "");
  i.other_cpu_ms = 980 + ticks_ms;  // a busy neighbour on one of the two cores
  EXPECT_EQ(fb::disturbance_of(i, 2, 2, t),
            "other processes took 0.98 CPUs, leaving 1.02 of 2 cores for 2 threads (run queue 3, 40 involuntary context switches)");
  EXPECT_EQ(fb::disturbance_of(i, 1, 2, t), "");  // one thread still has its core
  i.other_cpu_ms = 0;
  i.steal_ms = 160;  // 8% of 2 CPUs over the second
  EXPECT_EQ(fb::disturbance_of(i, 1, 2, t),
            "the hypervisor took 8% of the CPUs (steal) (run queue 3, 40 involuntary context switches)");
  t.disturbance_steal = 0.1;
  EXPECT_EQ(fb::disturbance_of(i, 1, 2, t), "");
  i.timed_wall_ms = 0;  // nothing timed: nothing to judge
  EXPECT_EQ(fb::disturbance_of(i, 8, 2, t), "");
}

}  // namespace
