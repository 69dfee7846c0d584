// Signs that something else disturbed a measurement: the load average, the CPU time other
// processes took, and the CPU clock, read before and after a case's timed phase. Timing
// noise is only explicable afterwards if these were recorded when it happened.
#pragma once
#include <chrono>

#include "harness/case.h"

namespace fb {

// One reading of the machine's state; unreadable figures are NaN.
struct SystemSnapshot {
  std::chrono::steady_clock::time_point at;
  double load1 = 0;           // 1-minute load average
  double busy_cpu_ms = 0;     // non-idle CPU time of the whole machine since boot (/proc/stat)
  double own_cpu_ms = 0;      // this process's user + system time (getrusage)
  double cpu_mhz = 0;         // mean current frequency over the online CPUs
};

SystemSnapshot take_system_snapshot();

// What happened between two snapshots. other_cpu_ms is clamped at 0: /proc/stat counts in
// clock ticks (10 ms), so a short quiet interval can read a little below our own time.
Interference interference_between(const SystemSnapshot& before, const SystemSnapshot& after);

// The mean current CPU frequency in MHz: cpufreq's scaling_cur_freq where the kernel has
// it, else /proc/cpuinfo's "cpu MHz" (x86); NaN when neither says (many VMs, Arm).
double current_cpu_mhz();

// Page-fault counters of the whole process (minor, major), for per-iteration deltas.
struct FaultCounters {
  int64_t minor = 0, major = 0;
};
FaultCounters read_fault_counters();

}  // namespace fb
