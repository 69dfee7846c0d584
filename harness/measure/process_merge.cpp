#include "harness/measure/process_merge.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>

#include "engine/ir/error.h"
#include "harness/measure/gpu_disturbance.h"
#include "harness/stats/bootstrap.h"
#include "harness/stats/statistics.h"

namespace fb {
namespace {

FaultStats merge_faults(const std::vector<CaseResult>& parts, FaultStats Measurement::*field,
                        Measurement CaseResult::*executor) {
  FaultStats out;
  double weighted = 0, n = 0;
  bool first = true;
  for (const CaseResult& p : parts) {
    const Measurement& m = p.*executor;
    const FaultStats& f = m.*field;
    out.min = first ? f.min : std::min(out.min, f.min);
    out.max = first ? f.max : std::max(out.max, f.max);
    first = false;
    weighted += f.mean * static_cast<double>(m.samples_ms.size());
    n += static_cast<double>(m.samples_ms.size());
  }
  out.mean = n > 0 ? weighted / n : 0;
  return out;
}

void merge_measurement(const std::vector<CaseResult>& parts, Measurement CaseResult::*executor, Measurement& out) {
  out.executor = (parts.front().*executor).executor;
  out.first_iteration_ms = (parts.front().*executor).first_iteration_ms;  // the one truly cold run
  for (size_t p = 0; p < parts.size(); ++p) {
    const Measurement& m = parts[p].*executor;
    out.samples_ms.insert(out.samples_ms.end(), m.samples_ms.begin(), m.samples_ms.end());
    out.sample_process.insert(out.sample_process.end(), m.samples_ms.size(), static_cast<int>(p));
  }
  out.minor_faults = merge_faults(parts, &Measurement::minor_faults, executor);
  out.major_faults = merge_faults(parts, &Measurement::major_faults, executor);
}

}  // namespace

void finish_merged_measurement(Measurement& m, int64_t batch) {
  m.stats = compute_stats(m.samples_ms);
  const Interval ci = hierarchical_median_ci(group_by_process(m.samples_ms, m.sample_process));
  m.stats.boot_ci_low = ci.low;
  m.stats.boot_ci_high = ci.high;
  m.items_per_s = m.stats.median > 0 ? static_cast<double>(batch) * 1000.0 / m.stats.median : 0;
}

std::vector<double> process_floors(const Measurement& m) {
  constexpr double kFloorQuantile = 0.05;
  std::vector<double> out;
  if (m.sample_process.empty()) return out;
  for (const auto& g : group_by_process(m.samples_ms, m.sample_process)) out.push_back(percentile(g, kFloorQuantile));
  return out;
}

ProcessNoise process_noise_of(const CaseResult& r) {
  const std::vector<double> e = process_floors(r.engine), ref = process_floors(r.reference);
  ProcessNoise n;
  n.processes = static_cast<int>(std::max<size_t>({e.size(), ref.size(), 1}));
  std::vector<double> s;
  for (size_t p = 0; p < e.size() && p < ref.size(); ++p)
    if (e[p] > 0) s.push_back(ref[p] / e[p]);
  n.engine = robust_log_spread(e);
  n.reference = robust_log_spread(ref);
  n.speedup = robust_log_spread(s);
  return n;
}

CaseResult merge_process_results(const std::vector<CaseResult>& parts) {
  FB_CHECK(!parts.empty(), "merge_process_results needs at least one part");
  for (const CaseResult& p : parts)
    if (p.status == CaseStatus::kError) return p;  // its message says which process, where the process failed
  // What belongs to the build, the check and the host (build log, layers, memory, where it
  // ran) comes from process 0, as do the fields added later to CaseResult; the timing
  // figures are replaced below.
  const CaseResult& first = parts.front();
  CaseResult r = first;
  r.engine = Measurement{};
  r.reference = Measurement{};
  r.spec.timing.processes = static_cast<int>(parts.size());
  for (const CaseResult& p : parts)
    if (!p.accuracy.passed && r.accuracy.passed) r.accuracy = p.accuracy;

  merge_measurement(parts, &CaseResult::engine, r.engine);
  merge_measurement(parts, &CaseResult::reference, r.reference);
  finish_merged_measurement(r.engine, r.spec.batch);
  finish_merged_measurement(r.reference, r.spec.batch);
  r.speedup = r.engine.stats.median > 0 ? r.reference.stats.median / r.engine.stats.median : 0;
  const Interval s = hierarchical_ratio_ci(group_by_process(r.reference.samples_ms, r.reference.sample_process),
                                           group_by_process(r.engine.samples_ms, r.engine.sample_process));
  r.speedup_ci_low = s.low;
  r.speedup_ci_high = s.high;
  r.process_noise = process_noise_of(r);

  // Noisy means one thing everywhere: the case's interval missed its target. Here that is
  // the merged (hierarchical) intervals the case is judged by, against the case's own target,
  // not the processes' widened ones, and whatever ended each process: a case whose
  // processes stopped on their time caps with the merged interval within target is not
  // noisy. stop_reason says what ended the timing: converged when every process did, else
  // the cap that ended most of them.
  const double target = r.spec.timing.target_rel_ci;
  auto rel_half_width = [](const SampleStats& st) { return (st.boot_ci_high - st.boot_ci_low) / 2 / st.median; };
  const bool met = r.spec.timing.stop_rule == "speedup-ci"
                       ? (r.speedup_ci_high - r.speedup_ci_low) / 2 / r.speedup <= target
                       : rel_half_width(r.engine.stats) <= target && rel_half_width(r.reference.stats) <= target;
  std::map<std::string, int> caps;
  std::vector<double> overheads;
  for (const CaseResult& p : parts) {
    if (p.stop_reason != "converged") ++caps[p.stop_reason];
    overheads.push_back(p.timer_overhead_ns);
  }
  r.noisy = !met;
  r.stop_reason = "converged";
  int most = 0;
  for (const auto& [reason, count] : caps)
    if (count > most) most = count, r.stop_reason = reason;
  r.timer_overhead_ns = percentile(overheads, 0.5);

  // Interference over the whole span of the workers: load and clock at its ends, other
  // processes' CPU time and the timed wall time summed.
  r.interference = first.interference;
  r.interference.load_after = parts.back().interference.load_after;
  r.interference.cpu_mhz_after = parts.back().interference.cpu_mhz_after;
  r.interference.other_cpu_ms = r.interference.timed_wall_ms = 0;
  r.interference.steal_ms = r.interference.involuntary_switches = r.interference.run_queue = 0;
  for (const CaseResult& p : parts) {
    r.interference.other_cpu_ms += p.interference.other_cpu_ms;
    r.interference.timed_wall_ms += p.interference.timed_wall_ms;
    r.interference.steal_ms += p.interference.steal_ms;
    r.interference.involuntary_switches += p.interference.involuntary_switches;
    r.interference.run_queue = std::max(r.interference.run_queue, p.interference.run_queue);
  }
  r.gpu = merge_gpu_environments(parts);
  // Disturbed when a process was still disturbed after its re-timings (the runner's): the
  // first such process names the reason, with how many there were.
  int disturbed = 0;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (parts[i].disturbed.empty()) continue;
    if (disturbed++ == 0) r.disturbed = "process " + std::to_string(i + 1) + ": " + parts[i].disturbed;
  }
  if (disturbed > 1)
    r.disturbed = std::to_string(disturbed) + " of " + std::to_string(parts.size()) + " processes disturbed; " + r.disturbed;
  r.status = r.accuracy.passed ? CaseStatus::kPassed : CaseStatus::kFailed;
  return r;
}

}  // namespace fb
