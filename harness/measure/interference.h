// Signs that something else disturbed a measurement: the load average, the CPU time other
// processes took, and the CPU clock, read before and after a case's timed phase. Timing
// noise is only explicable afterwards if these were recorded when it happened.
#pragma once
#include <chrono>
#include <string>
#include <vector>

#include "harness/cases/case.h"

namespace fb {

// One reading of the machine's state; unreadable figures are NaN.
struct SystemSnapshot {
  std::chrono::steady_clock::time_point at;
  double load1 = 0;           // 1-minute load average
  double busy_cpu_ms = 0;     // non-idle CPU time of the whole machine since boot (/proc/stat)
  double own_cpu_ms = 0;      // this process's user + system time (getrusage)
  double cpu_mhz = 0;         // mean current frequency over the online CPUs
  double steal_ms = 0;        // time the hypervisor ran other guests on this machine's CPUs since boot
  int procs_running = 0;      // runnable tasks now, ours included
  int64_t involuntary_switches = 0;  // this process's preemptions since it started
};

// `cpus`: the CPUs a pinned timing runs on, whose busy and steal time alone is read (other
// processes on other cores do not disturb it); empty: the whole machine.
SystemSnapshot take_system_snapshot(const std::vector<int>& cpus = {});

// What happened between two snapshots. other_cpu_ms is clamped at 0: /proc/stat counts in
// clock ticks (10 ms), so a short quiet interval can read a little below our own time.
Interference interference_between(const SystemSnapshot& before, const SystemSnapshot& after);

// Why a timing was disturbed, or "" when it was not: `threads` of the case wanted more than
// the `cores` other processes left free (by more than t.disturbance_cpus: their CPU time over
// the timed wall time), or the hypervisor's steal time exceeded t.disturbance_steal of the
// CPUs. The reason names the figures, with the run queue and our involuntary context
// switches beside them.
std::string disturbance_of(const Interference& i, int threads, int cores, const TimingConfig& t);

// `run`'s check before it starts: watches the machine for `seconds` and, where the load
// already leaves fewer free cores than `threads` need (the default thresholds), says so.
std::string busy_machine_warning(int threads, int cores, double seconds);

// The mean current CPU frequency in MHz: cpufreq's scaling_cur_freq where the kernel has
// it, else /proc/cpuinfo's "cpu MHz" (x86); NaN when neither says (many VMs, Arm).
double current_cpu_mhz();

// Page-fault counters of the whole process (minor, major), for per-iteration deltas.
struct FaultCounters {
  int64_t minor = 0, major = 0;
};
FaultCounters read_fault_counters();

}  // namespace fb
