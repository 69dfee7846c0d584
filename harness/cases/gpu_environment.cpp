#include "harness/cases/gpu_environment.h"

#include <algorithm>
#include <cmath>

#include "harness/util/format_number.h"
#include "harness/util/json_fields.h"

namespace fb {
namespace {

using json = nlohmann::json;
using namespace json_fields;

// Unknown equals unknown: a record read back must equal the one written.
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }

json flag_or_null(const std::optional<bool>& v) { return v ? json(*v) : json(nullptr); }

void read_flag(const json& j, const char* key, const std::string& prefix, std::optional<bool>& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return;
  bool v = false;
  read(j, key, prefix, v);
  out = v;
}

json reading_to_json(const GpuReading& r) {
  json processes = nullptr;
  if (r.compute_processes) {
    processes = json::array();
    for (const GpuProcess& p : *r.compute_processes) processes.push_back({{"pid", p.pid}, {"used_bytes", p.used_bytes}});
  }
  return {{"sm_mhz", number_or_null(r.sm_mhz)},
          {"memory_mhz", number_or_null(r.memory_mhz)},
          {"power_w", number_or_null(r.power_w)},
          {"temperature_c", number_or_null(r.temperature_c)},
          {"clock_event_reasons", r.clock_event_reasons ? json(*r.clock_event_reasons) : json(nullptr)},
          {"power_violation_ms", number_or_null(r.power_violation_ms)},
          {"thermal_violation_ms", number_or_null(r.thermal_violation_ms)},
          {"compute_processes", std::move(processes)},
          {"own_pid", r.own_pid}};
}

GpuReading reading_from_json(const json& j, const char* key) {
  const std::string field = std::string("gpu.") + key;
  const json& o = object_at(j, key, field);
  const std::string p = field + ".";
  GpuReading r;
  read(o, "sm_mhz", p, r.sm_mhz);
  read(o, "memory_mhz", p, r.memory_mhz);
  read(o, "power_w", p, r.power_w);
  read(o, "temperature_c", p, r.temperature_c);
  if (auto it = o.find("clock_event_reasons"); it != o.end() && !it->is_null()) {
    uint64_t bits = 0;
    read_int(o, "clock_event_reasons", p, bits);
    r.clock_event_reasons = bits;
  }
  read(o, "power_violation_ms", p, r.power_violation_ms);
  read(o, "thermal_violation_ms", p, r.thermal_violation_ms);
  if (auto it = o.find("compute_processes"); it != o.end() && !it->is_null()) {
    if (!it->is_array()) bad_field(p + "compute_processes", "a list", *it);
    r.compute_processes.emplace();
    for (size_t i = 0; i < it->size(); ++i) {
      const json& e = (*it)[i];
      const std::string ep = p + "compute_processes[" + std::to_string(i) + "]";
      if (!e.is_object()) bad_field(ep, "an object", e);
      GpuProcess gp;
      read_int(e, "pid", ep + ".", gp.pid);
      read_int(e, "used_bytes", ep + ".", gp.used_bytes);
      r.compute_processes->push_back(gp);
    }
  }
  read_int(o, "own_pid", p, r.own_pid);
  return r;
}

// "310→455 W" from two readings; one figure where they agree, "?" where unknown.
std::string before_after(double before, double after, const char* format) {
  auto one = [&](double v) { return std::isfinite(v) ? format_number(format, v) : std::string("?"); };
  return one(before) == one(after) ? one(after) : one(before) + "→" + one(after);
}

}  // namespace

bool operator==(const GpuSetup& a, const GpuSetup& b) {
  return a.name == b.name && a.uuid == b.uuid && a.driver == b.driver && a.cuda_driver == b.cuda_driver &&
         a.cuda_runtime == b.cuda_runtime && a.cublas == b.cublas && a.cudnn == b.cudnn &&
         same(a.power_limit_w, b.power_limit_w) && same(a.max_sm_mhz, b.max_sm_mhz) && a.ecc == b.ecc &&
         a.persistence == b.persistence && a.mig == b.mig;
}

bool operator==(const GpuReading& a, const GpuReading& b) {
  return same(a.sm_mhz, b.sm_mhz) && same(a.memory_mhz, b.memory_mhz) && same(a.power_w, b.power_w) &&
         same(a.temperature_c, b.temperature_c) && a.clock_event_reasons == b.clock_event_reasons &&
         same(a.power_violation_ms, b.power_violation_ms) && same(a.thermal_violation_ms, b.thermal_violation_ms) &&
         a.compute_processes == b.compute_processes && a.own_pid == b.own_pid;
}

bool operator==(const GpuEnvironment& a, const GpuEnvironment& b) {
  return a.not_read == b.not_read && a.setup == b.setup && a.before == b.before && a.after == b.after &&
         same(a.timed_ms, b.timed_ms) && same(a.settle_ms, b.settle_ms) && same(a.settled_sm_mhz, b.settled_sm_mhz) &&
         a.settled == b.settled && a.process == b.process;
}

void to_json(nlohmann::json& j, const GpuEnvironment& g) {
  const GpuSetup& s = g.setup;
  j = {{"not_read", g.not_read},
       {"setup",
        {{"name", s.name},
         {"uuid", s.uuid},
         {"driver", s.driver},
         {"cuda_driver", s.cuda_driver},
         {"cuda_runtime", s.cuda_runtime},
         {"cublas", s.cublas},
         {"cudnn", s.cudnn},
         {"power_limit_w", number_or_null(s.power_limit_w)},
         {"max_sm_mhz", number_or_null(s.max_sm_mhz)},
         {"ecc", flag_or_null(s.ecc)},
         {"persistence", flag_or_null(s.persistence)},
         {"mig", flag_or_null(s.mig)}}},
       {"before", reading_to_json(g.before)},
       {"after", reading_to_json(g.after)},
       {"timed_ms", number_or_null(g.timed_ms)},
       {"settle_ms", number_or_null(g.settle_ms)},
       {"settled_sm_mhz", number_or_null(g.settled_sm_mhz)},
       {"settled", g.settled},
       {"process", g.process}};
}

void from_json(const nlohmann::json& j, GpuEnvironment& g) {
  if (!j.is_object()) bad_field("gpu", "an object", j);
  g = GpuEnvironment{};
  read(j, "not_read", "gpu.", g.not_read);
  const json& s = object_at(j, "setup", "gpu.setup");
  const std::string sp = "gpu.setup.";
  GpuSetup& st = g.setup;
  read(s, "name", sp, st.name);
  read(s, "uuid", sp, st.uuid);
  read(s, "driver", sp, st.driver);
  read(s, "cuda_driver", sp, st.cuda_driver);
  read(s, "cuda_runtime", sp, st.cuda_runtime);
  read(s, "cublas", sp, st.cublas);
  read(s, "cudnn", sp, st.cudnn);
  read(s, "power_limit_w", sp, st.power_limit_w);
  read(s, "max_sm_mhz", sp, st.max_sm_mhz);
  read_flag(s, "ecc", sp, st.ecc);
  read_flag(s, "persistence", sp, st.persistence);
  read_flag(s, "mig", sp, st.mig);
  g.before = reading_from_json(j, "before");
  g.after = reading_from_json(j, "after");
  read(j, "timed_ms", "gpu.", g.timed_ms);
  read(j, "settle_ms", "gpu.", g.settle_ms);
  read(j, "settled_sm_mhz", "gpu.", g.settled_sm_mhz);
  read(j, "settled", "gpu.", g.settled);
  read_int(j, "process", "gpu.", g.process);
}

OtherGpuProcesses other_gpu_processes(const GpuReading& r) {
  OtherGpuProcesses o;
  if (!r.compute_processes || r.compute_processes->empty()) return o;
  const std::vector<GpuProcess>& all = *r.compute_processes;
  const bool ours_listed = std::any_of(all.begin(), all.end(), [&](const GpuProcess& p) { return p.pid == r.own_pid; });
  for (const GpuProcess& p : all)
    if (p.pid != r.own_pid) o.listed.push_back(p);
  o.unidentified = !ours_listed;
  o.count = static_cast<int>(o.listed.size()) - (ours_listed ? 0 : 1);
  return o;
}

std::string gpu_setup_text(const GpuSetup& s) {
  std::string t = (s.name.empty() ? "GPU" : s.name) + (s.uuid.empty() ? "" : " " + s.uuid);
  if (!s.driver.empty()) t += ", driver " + s.driver + (s.cuda_driver.empty() ? "" : " (CUDA " + s.cuda_driver + ")");
  for (const auto& [what, version] : {std::pair<const char*, const std::string&>{"runtime", s.cuda_runtime},
                                      {"cuBLAS", s.cublas}, {"cuDNN", s.cudnn}})
    if (!version.empty()) t += std::string(", ") + what + " " + version;
  if (std::isfinite(s.power_limit_w)) t += format_number(", %.0f W limit", s.power_limit_w);
  for (const auto& [what, mode] : {std::pair<const char*, const std::optional<bool>&>{"ECC", s.ecc},
                                   {"persistence", s.persistence}, {"MIG", s.mig}})
    if (mode) t += std::string(", ") + what + (*mode ? " on" : " off");
  return t;
}

std::string gpu_summary(const GpuEnvironment& g) {
  if (!g.not_read.empty()) return "GPU state not read: " + g.not_read;
  const GpuReading &b = g.before, &a = g.after;
  std::string s = (g.setup.name.empty() ? "GPU" : g.setup.name) + ": SM " + before_after(b.sm_mhz, a.sm_mhz, "%.0f") + " MHz";
  if (std::isfinite(g.settle_ms))
    s += g.settled ? format_number(" (settled after %.2f s)", g.settle_ms / 1000)
                   : format_number(" (still moving after %.2f s more warm-up)", g.settle_ms / 1000);
  s += ", memory " + before_after(b.memory_mhz, a.memory_mhz, "%.0f") + " MHz, " +
       before_after(b.power_w, a.power_w, "%.0f") + " W";
  if (std::isfinite(g.setup.power_limit_w)) s += format_number(" of %.0f W", g.setup.power_limit_w);
  s += ", " + before_after(b.temperature_c, a.temperature_c, "%.0f") + " °C";
  const OtherGpuProcesses others = other_gpu_processes(a);
  if (others.count > 0) s += ", " + std::to_string(others.count) + " other compute process" + (others.count == 1 ? "" : "es");
  return s;
}

}  // namespace fb
