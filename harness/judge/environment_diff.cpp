#include "harness/judge/environment_diff.h"

#include <cmath>
#include <set>

#include "harness/cases/gpu_environment.h"
#include "harness/stats/statistics.h"
#include "harness/util/format_number.h"

namespace fb {
namespace {

using json = nlohmann::json;

std::string library_text(const json& libs, const std::string& name) {
  if (!libs.is_object() || !libs.contains(name)) return "";
  const json& v = libs[name];
  return v.is_string() ? v.get<std::string>() : v.dump(-1, ' ', false, json::error_handler_t::replace);
}

// A figure, "" when unknown.
std::string fixed(double v, const char* f) { return std::isfinite(v) ? format_number(f, v) : ""; }

}  // namespace

// The median 1-minute load when the run's cases started timing; NaN when unread.
double median_load(const std::vector<const CaseResult*>& cases) {
  std::vector<double> loads;
  for (const CaseResult* r : cases)
    if (std::isfinite(r->interference.load_before) && r->interference.load_before >= 0)
      loads.push_back(r->interference.load_before);
  return loads.empty() ? std::nan("") : percentile(loads, 0.5);
}

// The setups of the GPUs a run's cases ran on, "; " between two ("" for a run on the CPU).
std::string gpu_setups(const std::vector<const CaseResult*>& cases) {
  std::set<std::string> setups;
  for (const CaseResult* r : cases)
    if (r->gpu && r->gpu->not_read.empty()) setups.insert(gpu_setup_text(r->gpu->setup));
  std::string out;
  for (const std::string& s : setups) out += (out.empty() ? "" : "; ") + s;
  return out;
}

std::vector<EnvField> environment_fields(const RunInfo& a, double load_a, const RunInfo* b, double load_b,
                                         const std::string& gpus_a, const std::string& gpus_b) {
  std::vector<EnvField> out;
  const auto add = [&](std::string name, std::string value, std::string base, bool differs) {
    out.push_back({std::move(name), std::move(value), std::move(base), b && differs});
  };
  const auto text = [&](const char* name, const std::string RunInfo::*field) {
    add(name, a.*field, b ? b->*field : "", b && a.*field != b->*field);
  };
  const auto commit = [](const RunInfo& i) { return i.git_commit + (i.git_dirty ? " (dirty)" : ""); };
  add("Git commit", commit(a), b ? commit(*b) : "", b && commit(a) != commit(*b));
  text("fusebench", &RunInfo::fusebench_version);
  text("Host", &RunInfo::host);
  text("CPU", &RunInfo::cpu_model);
  text("CPU flags", &RunInfo::cpu_flags);
  add("Cores", std::to_string(a.cores), b ? std::to_string(b->cores) : "", b && a.cores != b->cores);
  const auto gib = [](int64_t v) { return fixed(double(v) / (1024.0 * 1024.0 * 1024.0), "%.1f GiB"); };
  add("Memory", gib(a.memory_bytes), b ? gib(b->memory_bytes) : "", b && a.memory_bytes != b->memory_bytes);
  text("Kernel", &RunInfo::kernel);
  text("Compiler", &RunInfo::compiler);
  text("Compiler flags", &RunInfo::compiler_flags);
  std::set<std::string> libs;
  for (const json* l : {&a.library_versions, b ? &b->library_versions : nullptr})
    if (l && l->is_object())
      for (auto it = l->begin(); it != l->end(); ++it) libs.insert(it.key());
  for (const std::string& lib : libs) {
    const std::string va = library_text(a.library_versions, lib);
    const std::string vb = b ? library_text(b->library_versions, lib) : "";
    add("Library " + lib, va, vb, va != vb);
  }
  if (!gpus_a.empty() || !gpus_b.empty()) add("GPUs", gpus_a, gpus_b, gpus_a != gpus_b);
  // A whole core's worth of other work is what moves a timing; smaller drift is not news.
  add("Load (1-min, median over cases)", fixed(load_a, "%.2f"), fixed(load_b, "%.2f"),
      b && (std::isfinite(load_a) != std::isfinite(load_b) || std::fabs(load_a - load_b) >= 1.0));
  text("Command", &RunInfo::command);
  return out;
}


}  // namespace fb
