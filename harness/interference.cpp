#include "harness/interference.h"

#include <sys/resource.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

#include "harness/environment.h"

namespace fb {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The "cpu" line of /proc/stat in ms: user nice system idle iowait irq softirq steal ...
// Busy is everything but idle and iowait (guest time is already inside user).
double read_busy_cpu_ms() {
  std::ifstream in("/proc/stat");
  std::string label;
  if (!(in >> label) || label != "cpu") return kNaN;
  double v[8] = {};
  for (double& x : v)
    if (!(in >> x)) return kNaN;
  const double ticks = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
  const long hz = sysconf(_SC_CLK_TCK);
  return hz > 0 ? ticks * 1000.0 / static_cast<double>(hz) : kNaN;
}

double read_own_cpu_ms() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return kNaN;
  auto ms = [](const timeval& t) { return static_cast<double>(t.tv_sec) * 1000.0 + static_cast<double>(t.tv_usec) / 1000.0; };
  return ms(u.ru_utime) + ms(u.ru_stime);
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

SystemSnapshot take_system_snapshot() {
  SystemSnapshot s;
  s.at = std::chrono::steady_clock::now();
  s.load1 = load_average()[0];
  if (s.load1 < 0) s.load1 = kNaN;
  s.busy_cpu_ms = read_busy_cpu_ms();
  s.own_cpu_ms = read_own_cpu_ms();
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
  return i;
}

FaultCounters read_fault_counters() {
  rusage u{};
  if (getrusage(RUSAGE_SELF, &u) != 0) return {};
  return {u.ru_minflt, u.ru_majflt};
}

}  // namespace fb
