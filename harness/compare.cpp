#include "harness/compare.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/ir/error.h"
#include "harness/format_number.h"
#include "harness/process_merge.h"
#include "harness/statistics.h"

namespace fb {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
// Earlier runs that say how far this case moves between runs: at least this many, and only
// the latest this many (older nights may predate a change that reset the level).
constexpr size_t kMinHistory = 3;
constexpr size_t kMaxHistory = 10;


bool is_change(Verdict v) { return v == Verdict::kSlower || v == Verdict::kFaster; }

}  // namespace

const char* verdict_name(Verdict v) {
  switch (v) {
    case Verdict::kFaster: return "faster";
    case Verdict::kSlower: return "slower";
    case Verdict::kUnchanged: return "unchanged";
    case Verdict::kNoisy: return "noisy";
    case Verdict::kEnvironment: return "environment";
  }
  return "?";
}

FigureValue engine_figure(const CaseResult& r) {
  return {r.engine.stats.median, process_medians(r.engine), {r.engine.stats.boot_ci_low, r.engine.stats.boot_ci_high}};
}

FigureValue reference_figure(const CaseResult& r) {
  return {r.reference.stats.median, process_medians(r.reference),
          {r.reference.stats.boot_ci_low, r.reference.stats.boot_ci_high}};
}

FigureValue speedup_figure(const CaseResult& r) {
  FigureValue f{r.speedup, {}, {r.speedup_ci_low, r.speedup_ci_high}};
  const std::vector<double> e = process_medians(r.engine), ref = process_medians(r.reference);
  if (e.size() == ref.size() && e.size() >= 2)
    for (size_t p = 0; p < e.size(); ++p) f.per_process.push_back(e[p] > 0 ? ref[p] / e[p] : kNaN);
  return f;
}

FigureChange judge_figure(const FigureValue& base, const FigureValue& cand, const std::vector<double>& history,
                          bool higher_is_better, const CompareOptions& o) {
  FigureChange c;
  c.baseline = base.value;
  c.candidate = cand.value;
  if (!(base.value > 0) || !(cand.value > 0) || !std::isfinite(base.value) || !std::isfinite(cand.value)) {
    c.noise_source = "no value";
    return c;  // noisy: nothing to judge
  }
  const double d = std::log(cand.value / base.value);
  c.change = cand.value / base.value - 1;
  const double q = 1 - o.alpha / 2;

  // Between processes: the pooled variance of the per-process logs of both runs.
  double se = kNaN, crit = kNaN;
  const size_t kb = base.per_process.size(), kc = cand.per_process.size();
  const double sb = log_spread(base.per_process), sc = log_spread(cand.per_process);
  if (std::isfinite(sb) && std::isfinite(sc)) {
    const double df = static_cast<double>(kb + kc - 2), vb = sb * sb, vc = sc * sc;
    const double pooled = ((kb - 1) * vb + (kc - 1) * vc) / df;
    se = std::sqrt(pooled * (1.0 / kb + 1.0 / kc));
    crit = student_t_quantile(q, df);
    c.noise_source = "processes (" + std::to_string(kb) + "+" + std::to_string(kc) + ")";
    c.rank_p = rank_sum_p(cand.per_process, base.per_process);
  } else {
    // One process: only the samples' interval is known, which says nothing of the next process.
    auto side = [](const Interval& i) {
      return i.low > 0 && i.high >= i.low ? std::log(i.high / i.low) / (2 * normal_quantile(0.975)) : kNaN;
    };
    se = std::hypot(side(base.interval), side(cand.interval));
    crit = normal_quantile(q);
    c.noise_source = "samples (1 process)";
  }
  // Between runs: how far this case's run-level value moved over the earlier runs.
  std::vector<double> recent(history.end() - static_cast<std::ptrdiff_t>(std::min(history.size(), kMaxHistory)),
                             history.end());
  const double sh = recent.size() >= kMinHistory ? log_spread(recent) : kNaN;
  if (std::isfinite(sh)) {
    const double se_runs = std::sqrt(2.0) * sh;  // the difference of two runs
    const double crit_runs = student_t_quantile(q, static_cast<double>(recent.size() - 1));
    if (!std::isfinite(se) || crit_runs * se_runs > crit * se) {
      se = se_runs;
      crit = crit_runs;
      c.noise_source = "runs (" + std::to_string(recent.size()) + ")";
    }
  }
  if (!std::isfinite(se)) {
    c.noise_source = "unknown";
    return c;
  }
  const double reach = crit * se;
  c.noise = se;
  c.detectable = std::exp(reach) - 1;
  c.change_ci = {std::exp(d - reach) - 1, std::exp(d + reach) - 1};
  const bool beyond = std::fabs(d) > reach && std::fabs(c.change) >= o.min_effect;
  // The rank test exists only where both runs have processes; one process a side has no
  // per-process values to rank (old single-process results).
  const bool ranks_agree = c.noise_source.rfind("samples", 0) == 0 || kb < 2 || kc < 2 || c.rank_p < o.alpha;
  if (beyond && ranks_agree)
    c.verdict = (higher_is_better ? d < 0 : d > 0) ? Verdict::kSlower : Verdict::kFaster;
  else if (beyond || c.detectable > o.min_effect)  // beyond the interval, not the rank test: noisy
    c.verdict = Verdict::kNoisy;
  else
    c.verdict = Verdict::kUnchanged;
  return c;
}

CaseJudgement judge_case(const CaseResult& base, const CaseResult& cand, const CaseHistory* history,
                         bool same_machine, const CompareOptions& o) {
  static const CaseHistory kNone;
  const CaseHistory& h = history ? *history : kNone;
  CaseJudgement j;
  j.engine = judge_figure(engine_figure(base), engine_figure(cand), h.engine, false, o);
  j.reference = judge_figure(reference_figure(base), reference_figure(cand), h.reference, false, o);
  j.speedup = judge_figure(speedup_figure(base), speedup_figure(cand), h.speedup, true, o);
  j.speedup_only = !same_machine && !o.cross_host;
  const std::string speedup_text = "speedup " + signed_percent(j.speedup.change) + " (noise ±" + format_number("%.1f%%", 100 * j.speedup.detectable) + ")";
  const std::string times_text = "engine " + signed_percent(j.engine.change) + ", reference " + signed_percent(j.reference.change);

  const Verdict s = j.speedup.verdict, e = j.engine.verdict;
  if (is_change(s)) {
    j.verdict = s;
    j.reason = speedup_text + " beyond its noise" + (j.speedup_only ? "" : "; " + times_text);
  } else if (!j.speedup_only && is_change(e) && s == Verdict::kUnchanged &&
             std::signbit(j.reference.change) == std::signbit(j.engine.change)) {
    j.verdict = Verdict::kEnvironment;
    j.reason = times_text + ": moved together, " + speedup_text + " within its noise";
  } else if (!j.speedup_only && is_change(e)) {
    j.verdict = Verdict::kNoisy;
    j.reason = "engine " + signed_percent(j.engine.change) + " beyond its noise, but the " + speedup_text + " cannot confirm it";
  } else if (s == Verdict::kUnchanged) {
    j.verdict = Verdict::kUnchanged;
    j.reason = speedup_text + " within its noise";
  } else {
    j.verdict = Verdict::kNoisy;
    j.reason = std::isfinite(j.speedup.detectable)
                   ? "noise ±" + format_number("%.1f%%", 100 * j.speedup.detectable) + " exceeds the change to detect (" +
                         format_number("%.1f%%", 100 * o.min_effect) + ")"
                   : "the speedup's noise is unknown";
  }
  // The timer could not reach its precision target: "unchanged" would claim too much.
  if (j.verdict == Verdict::kUnchanged && (base.noisy || cand.noisy)) {
    j.verdict = Verdict::kNoisy;
    j.reason += "; flagged noisy when timed";
  }
  if (j.speedup_only) j.reason += "; different machines: judged on speedup only";
  return j;
}

std::vector<CaseComparison> compare_runs(const std::vector<StoredCase>& baseline,
                                         const std::vector<StoredCase>& candidate, const CompareOptions& o,
                                         const HistoryByKey* history, bool same_machine) {
  std::vector<CaseComparison> out;
  std::map<std::string, size_t> index_of;
  auto entry = [&](const CaseResult& r) -> CaseComparison& {
    const std::string key = r.spec.case_key();
    auto [it, fresh] = index_of.emplace(key, out.size());
    if (fresh) out.push_back(CaseComparison{key, r.spec.label(), {}, {}, {}, {}});
    return out[it->second];
  };
  for (const StoredCase& sc : candidate) entry(sc.result).candidate = sc.result;
  for (const StoredCase& sc : baseline) entry(sc.result).baseline = sc.result;

  for (CaseComparison& c : out) {
    if (!c.baseline) {
      c.note = "new: not in the baseline";
    } else if (!c.candidate) {
      c.note = "gone: only in the baseline";
      c.label = c.baseline->spec.label();
    } else if (c.candidate->status == "error") {
      c.note = "error in the candidate: " + c.candidate->error;
    } else if (c.baseline->status == "error") {
      c.note = "error in the baseline: " + c.baseline->error;
    } else {
      const CaseHistory* h = nullptr;
      if (history)
        if (auto it = history->find(c.case_key); it != history->end()) h = &it->second;
      c.judgement = judge_case(*c.baseline, *c.candidate, h, same_machine, o);
    }
  }
  return out;
}

std::string machine_fingerprint(const RunInfo& info) {
  return info.host + " | " + info.cpu_model + " | " + std::to_string(info.cores) + " cores";
}

HistoryByKey load_history(const ResultStore& store, int64_t up_to) {
  const std::string machine = machine_fingerprint(store.load_run(up_to).info);
  std::vector<StoredRun> runs = store.list_runs();
  const auto last_run = std::find_if(runs.begin(), runs.end(), [&](const StoredRun& r) { return r.id == up_to; });
  if (last_run != runs.end()) runs.erase(last_run + 1, runs.end());
  // Newest first, until every case of run `up_to` has the kMaxHistory values judge_figure
  // reads: a nightly database of a year need not be read whole for each comparison.
  HistoryByKey history;
  std::set<std::string> wanted;
  size_t complete = 0;
  for (auto run = runs.rbegin(); run != runs.rend(); ++run) {
    if (machine_fingerprint(run->info) != machine) continue;
    std::map<std::string, const CaseFigures*> last;  // a key listed twice: its last result
    const std::vector<CaseFigures> cases = store.load_case_figures(run->id);
    for (const CaseFigures& f : cases)
      if (f.status != "error") last[f.case_key] = &f;
    if (run == runs.rbegin())
      for (const auto& [key, r] : last) wanted.insert(key);
    for (const auto& [key, r] : last) {
      if (!wanted.count(key)) continue;
      CaseHistory& h = history[key];
      if (h.engine.size() == kMaxHistory) continue;
      h.engine.push_back(r->engine.median);
      h.reference.push_back(r->reference.median);
      h.speedup.push_back(r->speedup.median);
      complete += h.engine.size() == kMaxHistory;
    }
    if (complete == wanted.size()) break;
  }
  for (auto& [key, h] : history)
    for (std::vector<double>* v : {&h.engine, &h.reference, &h.speedup}) std::reverse(v->begin(), v->end());
  return history;
}

JudgementContext judgement_context(const ResultStore& store, int64_t run, const ResultStore& baseline_store,
                                   int64_t baseline_run, bool with_history) {
  JudgementContext c;
  c.machine = machine_fingerprint(store.load_run(run).info);
  c.baseline_machine = machine_fingerprint(baseline_store.load_run(baseline_run).info);
  c.same_machine = c.machine == c.baseline_machine;
  if (with_history) c.history = load_history(baseline_store, baseline_run);
  return c;
}

std::string change_text(const FigureChange& f) {
  return signed_percent(f.change) + (std::isfinite(f.detectable) ? format_number(" ±%.1f%%", 100 * f.detectable) : " ±?");
}

}  // namespace fb
