#include "harness/measure/gpu_disturbance.h"

#include <cmath>
#include <map>

#include "harness/util/format_number.h"

namespace fb {
namespace {

std::string ms_text(double ms) { return format_number(ms >= 1 ? "%.0f ms" : "%.2f ms", ms); }

std::string join(const std::vector<std::string>& parts, const char* separator) {
  std::string out;
  for (const std::string& p : parts) out += (out.empty() ? "" : separator) + p;
  return out;
}

std::string memory_text(int64_t bytes) {
  if (bytes < 0) return "";
  const double mib = static_cast<double>(bytes) / (1 << 20);
  return mib >= 1024 ? format_number("%.1f GiB", mib / 1024) : format_number("%.0f MiB", mib);
}

std::string processes_text(const std::vector<GpuProcess>& ps) {
  std::vector<std::string> parts;
  for (const GpuProcess& p : ps) {
    const std::string memory = memory_text(p.used_bytes);
    parts.push_back("pid " + std::to_string(p.pid) + (memory.empty() ? "" : ", " + memory));
  }
  return join(parts, "; ");
}

// Other processes seen in either reading, by pid.
std::string sharing_of(const GpuEnvironment& g) {
  const OtherGpuProcesses b = other_gpu_processes(g.before), a = other_gpu_processes(g.after);
  std::map<int64_t, GpuProcess> seen;
  for (const OtherGpuProcesses* o : {&b, &a})
    for (const GpuProcess& p : o->listed) seen[p.pid] = p;
  std::vector<GpuProcess> listed;
  for (const auto& [pid, p] : seen) listed.push_back(p);
  const bool unidentified = b.unidentified || a.unidentified;
  const int count = unidentified ? std::max(b.count, a.count) : static_cast<int>(listed.size());
  if (count <= 0) return "";
  const std::string n = std::to_string(count) + " other compute process" + (count == 1 ? "" : "es");
  if (unidentified)
    return "GPU shared with " + n + " (NVML lists " + processes_text(listed) +
           "; ours is not among those pids, so one of them is ours: another PID namespace)";
  return "GPU shared with " + n + " (" + processes_text(listed) + ")";
}

}  // namespace

std::string gpu_disturbance_of(const GpuEnvironment& g) {
  if (!g.not_read.empty()) return "";
  const GpuReading &b = g.before, &a = g.after;
  const std::string of_timed = std::isfinite(g.timed_ms) ? format_number(" of %.1f s", g.timed_ms / 1000) : "";
  std::vector<std::string> throttled;
  // The violation counters are cumulative: what they grew by is the timed phase's (NaN: unknown).
  if (const double power = a.power_violation_ms - b.power_violation_ms; power > 0)
    throttled.push_back("power cap for " + ms_text(power) + of_timed);
  if (const double thermal = a.thermal_violation_ms - b.thermal_violation_ms; thermal > 0)
    throttled.push_back("thermal limit for " + ms_text(thermal) + of_timed);
  if (a.clock_event_reasons) {
    namespace e = gpu_clock_event;
    static const std::pair<uint64_t, const char*> kNamed[] = {{e::kSwPowerCap, "SW power cap"},
                                                              {e::kHwSlowdown, "HW slowdown"},
                                                              {e::kSwThermalSlowdown, "SW thermal slowdown"},
                                                              {e::kHwThermalSlowdown, "HW thermal slowdown"},
                                                              {e::kHwPowerBrakeSlowdown, "HW power brake"}};
    std::vector<std::string> named;
    for (const auto& [bit, name] : kNamed)
      if (*a.clock_event_reasons & bit) named.push_back(name);
    if (!named.empty()) throttled.push_back("clock events at the end: " + join(named, ", "));
  }
  const bool clocks_known = std::isfinite(b.sm_mhz) && std::isfinite(a.sm_mhz) && b.sm_mhz > 0;
  const bool dropped = clocks_known && a.sm_mhz < b.sm_mhz * (1 - kGpuClockDropFraction);
  if (clocks_known && (dropped || !throttled.empty())) {
    const std::string from = format_number("%.0f", b.sm_mhz), to = format_number("%.0f", a.sm_mhz);
    throttled.push_back("SM clock " + (from == to ? to : from + "→" + to) + " MHz" +
                        (dropped ? format_number(" (%+.1f%%)", 100 * (a.sm_mhz / b.sm_mhz - 1)) : ""));
  }
  std::vector<std::string> why;
  if (!throttled.empty()) why.push_back("GPU throttled: " + join(throttled, ", "));
  if (const std::string shared = sharing_of(g); !shared.empty()) why.push_back(shared);
  return join(why, "; ");
}

std::string join_disturbances(const std::string& cpu, const std::string& gpu) {
  return cpu.empty() ? gpu : gpu.empty() ? cpu : cpu + "; " + gpu;
}

std::optional<GpuEnvironment> merge_gpu_environments(const std::vector<CaseResult>& parts) {
  // The worst: flagged before not, then the lower SM clock at the end (unknown last).
  auto worse = [](const GpuEnvironment& x, const GpuEnvironment& y) {
    const bool fx = !gpu_disturbance_of(x).empty(), fy = !gpu_disturbance_of(y).empty();
    if (fx != fy) return fx;
    const double cx = x.after.sm_mhz, cy = y.after.sm_mhz;
    return std::isfinite(cx) && (!std::isfinite(cy) || cx < cy);
  };
  const GpuEnvironment* first = nullptr;
  const GpuEnvironment* worst = nullptr;
  int worst_process = 0;
  for (size_t p = 0; p < parts.size(); ++p) {
    if (!parts[p].gpu) continue;
    if (!first) first = &*parts[p].gpu;
    if (!worst || worse(*parts[p].gpu, *worst)) worst = &*parts[p].gpu, worst_process = static_cast<int>(p);
  }
  if (!first) return std::nullopt;
  GpuEnvironment g = *worst;
  g.setup = first->setup;
  g.process = worst_process;
  for (const CaseResult& p : parts)
    if (p.gpu && g.not_read.empty()) g.not_read = p.gpu->not_read;
  return g;
}

std::vector<std::string> gpu_setup_differences(const GpuSetup& b, const GpuSetup& c) {
  std::vector<std::string> out;
  auto text = [&](const char* what, const std::string& x, const std::string& y) {
    if (!x.empty() && !y.empty() && x != y) out.push_back(std::string(what) + " " + x + "→" + y);
  };
  auto number = [&](const char* what, double x, double y, const char* unit) {
    if (std::isfinite(x) && std::isfinite(y) && x != y)
      out.push_back(std::string(what) + " " + format_number("%g", x) + "→" + format_number("%g", y) + unit);
  };
  auto flag = [&](const char* what, const std::optional<bool>& x, const std::optional<bool>& y) {
    if (x && y && *x != *y) out.push_back(std::string(what) + (*x ? " on→off" : " off→on"));
  };
  text("GPU", b.uuid, c.uuid);
  text("driver", b.driver, c.driver);
  number("power limit", b.power_limit_w, c.power_limit_w, " W");
  flag("ECC", b.ecc, c.ecc);
  flag("persistence", b.persistence, c.persistence);
  flag("MIG", b.mig, c.mig);
  number("max SM clock", b.max_sm_mhz, c.max_sm_mhz, " MHz");
  return out;
}

}  // namespace fb
