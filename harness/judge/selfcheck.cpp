#include "harness/judge/selfcheck.h"

#include <cmath>
#include <map>

#include "harness/stats/statistics.h"

namespace fb {
namespace {

void add_run(HistoryByKey& h, const std::vector<StoredCase>& run) {
  for (const StoredCase& sc : run) {
    if (sc.result.status == CaseStatus::kError) continue;
    append_to_history(h[sc.result.spec.case_key()], sc.result);
  }
}

}  // namespace

SelfCheckReport summarize_self_check(const std::vector<SelfCheckRun>& runs, const CompareOptions& o) {
  SelfCheckReport report;
  std::map<std::string, size_t> index;
  std::map<std::string, std::vector<double>> detectables, process_spreads;
  auto entry = [&](const std::string& key, const std::string& label) -> SelfCheckCase& {
    auto [it, fresh] = index.emplace(key, report.cases.size());
    if (fresh) report.cases.push_back(SelfCheckCase{key, label});
    return report.cases[it->second];
  };
  // One comparison of a slowed run (detected when `slower`) or of an A/A pair (a false
  // alarm when `slower` or `faster`).
  int run_number = 0;
  auto count = [&](const CaseComparison& c, bool slowed) {
    if (!c.judgement) return;
    SelfCheckCase& e = entry(c.case_key, c.label);
    const Verdict v = c.judgement->verdict;
    report.verdicts.push_back({run_number, slowed, c.label, v, c.judgement->reason});
    if (slowed) {
      ++e.injected, ++report.injected;
      if (v == Verdict::kSlower) ++e.detected, ++report.detected;
      if (c.judgement->engine.verdict == Verdict::kSlower) ++e.engine_detected, ++report.engine_detected;
      return;
    }
    ++e.comparisons, ++report.comparisons;
    if (v == Verdict::kSlower || v == Verdict::kFaster) ++e.false_alarms, ++report.false_alarms;
    e.environment += v == Verdict::kEnvironment;
    e.noisy += v == Verdict::kNoisy;
    e.unchanged += v == Verdict::kUnchanged;
    if (std::isfinite(c.judgement->speedup.detectable)) detectables[c.case_key].push_back(c.judgement->speedup.detectable);
  };
  HistoryByKey history;  // the A/A runs so far, up to and including the baseline, as compare has it
  const SelfCheckRun* last_aa = nullptr;
  for (const SelfCheckRun& run : runs) {
    ++run_number;
    if (!run.paired_baseline.empty()) {
      CompareOptions paired = o;
      paired.paired = true;
      for (const CaseComparison& c : compare_runs(run.paired_baseline, run.cases, paired)) count(c, run.slowed);
    } else if (run.slowed) {
      if (last_aa)
        for (const CaseComparison& c : compare_runs(last_aa->cases, run.cases, o, &history)) count(c, true);
      continue;
    } else if (last_aa) {
      for (const CaseComparison& c : compare_runs(last_aa->cases, run.cases, o, &history)) count(c, false);
    }
    if (run.slowed) continue;
    add_run(history, run.cases);
    for (const StoredCase& sc : run.cases)
      if (std::isfinite(sc.result.process_noise.speedup))
        process_spreads[sc.result.spec.case_key()].push_back(sc.result.process_noise.speedup);
    last_aa = &run;
  }
  for (SelfCheckCase& e : report.cases) {
    const auto it = history.find(e.case_key);
    if (it != history.end()) {
      e.run_spread_speedup = log_spread(it->second.speedup);
      e.run_spread_engine = log_spread(it->second.engine);
    }
    e.detectable = detectables.count(e.case_key) ? percentile(detectables[e.case_key], 0.5) : NAN;
    e.process_spread = process_spreads.count(e.case_key) ? percentile(process_spreads[e.case_key], 0.5) : NAN;
  }
  return report;
}

}  // namespace fb
