#include "harness/measure/interference.h"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include <thread>

#include "harness/measure/environment.h"
#include "harness/util/format_number.h"

namespace fb {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// From /proc/stat, in ms over all CPUs, or over `cpus` when given (a pinned timing, whose
// neighbours on other cores do not disturb it): the time the CPUs were busy in this machine
// (user nice system irq softirq; guest time is already inside user), the time the
// hypervisor ran other guests on them (steal), and the runnable tasks now (procs_running,
// machine-wide). Unreadable: NaN, -1.
struct ProcStat {
  double busy_ms = kNaN, steal_ms = kNaN;
  int procs_running = -1;
};

ProcStat read_proc_stat(const std::vector<int>& cpus) {
  ProcStat p;
  const long hz = sysconf(_SC_CLK_TCK);
  std::ifstream in("/proc/stat");
  if (hz <= 0 || !in) return p;
  const std::string wanted_all = "cpu";
  double busy = 0, steal = 0;
  int lines = 0;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("procs_running ", 0) == 0) p.procs_running = std::atoi(line.c_str() + 14);
    if (line.rfind("cpu", 0) != 0) continue;
    std::istringstream fields(line);
    std::string label;
    double v[8] = {};
    fields >> label;
    for (double& x : v) fields >> x;
    if (!fields) continue;
    const bool whole = label == wanted_all;
    const bool one_of_ours = !whole && std::find(cpus.begin(), cpus.end(), std::atoi(label.c_str() + 3)) != cpus.end();
    if (cpus.empty() ? !whole : !one_of_ours) continue;
    busy += v[0] + v[1] + v[2] + v[5] + v[6];
    steal += v[7];
    ++lines;
  }
  if (lines == 0) return p;
  p.busy_ms = busy * 1000.0 / static_cast<double>(hz);
  p.steal_ms = steal * 1000.0 / static_cast<double>(hz);
  return p;
}

}  // namespace

double current_cpu_mhz() {
  const long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  double sum = 0;
  int count = 0;
  for (long c = 0; c < cpus; ++c) {
    std::ifstream f("/sys/devices/system/cpu/cpu" + std::to_string(c) + "/cpufreq/scaling_cur_freq");
    double khz = 0;
    if (f >> khz && khz > 0) sum += khz / 1000.0, ++count;
  }
  if (count > 0) return sum / count;
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    const double mhz = std::strtod(line.c_str() + colon + 1, nullptr);
    if (mhz > 0) sum += mhz, ++count;
  }
  return count > 0 ? sum / count : kNaN;
}

SystemSnapshot take_system_snapshot(const std::vector<int>& cpus) {
  SystemSnapshot s;
  s.at = std::chrono::steady_clock::now();
  s.load1 = load_average()[0];
  if (s.load1 < 0) s.load1 = kNaN;
  const ProcStat p = read_proc_stat(cpus);
  s.busy_cpu_ms = p.busy_ms;
  s.steal_ms = p.steal_ms;
  s.procs_running = p.procs_running;
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) == 0) {
    auto ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1000.0 + static_cast<double>(t.tv_usec) / 1000.0; };
    s.own_cpu_ms = ms(u.ru_utime) + ms(u.ru_stime);
    s.involuntary_switches = u.ru_nivcsw;
  } else {
    s.own_cpu_ms = kNaN;
  }
  s.cpu_mhz = current_cpu_mhz();
  return s;
}

Interference interference_between(const SystemSnapshot& before, const SystemSnapshot& after) {
  Interference i;
  i.load_before = before.load1;
  i.load_after = after.load1;
  i.timed_wall_ms = std::chrono::duration<double, std::milli>(after.at - before.at).count();
  const double others = (after.busy_cpu_ms - before.busy_cpu_ms) - (after.own_cpu_ms - before.own_cpu_ms);
  i.other_cpu_ms = std::isnan(others) ? kNaN : std::max(0.0, others);
  i.cpu_mhz_before = before.cpu_mhz;
  i.cpu_mhz_after = after.cpu_mhz;
  const double steal = after.steal_ms - before.steal_ms;
  i.steal_ms = std::isnan(steal) ? kNaN : std::max(0.0, steal);
  i.run_queue = std::max(before.procs_running, after.procs_running);
  i.involuntary_switches = after.involuntary_switches - before.involuntary_switches;
  return i;
}

std::string disturbance_of(const Interference& i, int threads, int cores, const TimingConfig& t) {
  if (!(i.timed_wall_ms > 0) || cores <= 0) return "";
  // /proc/stat counts whole clock ticks per CPU: over a short timing the other processes'
  // time can read up to a tick per CPU at each end too high, so only what lies beyond that
  // counts (a 20 ms timing on 2 CPUs once read 3.3 CPUs of others).
  const long hz = sysconf(_SC_CLK_TCK);
  const double tick_ms = hz > 0 ? 1000.0 / static_cast<double>(hz) : 10.0;
  const double other_cpus = std::max(0.0, i.other_cpu_ms - 2 * tick_ms * cores) / i.timed_wall_ms;
  const double steal = i.steal_ms / (i.timed_wall_ms * cores);
  std::string why;
  const std::string for_threads = std::to_string(threads) + " thread" + (threads == 1 ? "" : "s");
  if (threads > cores)
    why = for_threads + " on " + std::to_string(cores) + " cores" + format_number(" (other processes took %.2f CPUs)", other_cpus);
  else if (std::isfinite(other_cpus) && threads > cores - other_cpus + t.disturbance_cpus)
    why = format_number("other processes took %.2f CPUs", other_cpus) + ", leaving " +
          format_number("%.2f", std::max(0.0, cores - other_cpus)) + " of " + std::to_string(cores) + " cores for " +
          for_threads;
  if (std::isfinite(steal) && steal > t.disturbance_steal)
    why += (why.empty() ? "" : "; ") + format_number("the hypervisor took %.0f%% of the CPUs (steal)", 100 * steal);
  if (why.empty()) return "";
  return why + " (run queue " + std::to_string(i.run_queue) + ", " + std::to_string(i.involuntary_switches) +
         " involuntary context switches)";
}

std::string busy_machine_warning(int threads, int cores, double seconds) {
  if (threads > cores)
    return "warning: cases ask for " + std::to_string(threads) + " threads and this machine has " +
           std::to_string(cores) + " cores: they will be flagged disturbed";
  const SystemSnapshot before = take_system_snapshot();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  const SystemSnapshot after = take_system_snapshot();
  const Interference i = interference_between(before, after);
  TimingConfig t;
  const std::string why = disturbance_of(i, threads, cores, t);
  if (why.empty()) return "";
  return "warning: the machine is already busy: " + why + format_number(" over %.1f s before the run", seconds) +
         "; its cases will be re-timed or flagged disturbed";
}

FaultCounters read_fault_counters() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return {};
  return {u.ru_minflt, u.ru_majflt};
}

}  // namespace fb
