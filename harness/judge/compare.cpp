#include "harness/judge/compare.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "engine/ir/error.h"
#include "harness/measure/gpu_disturbance.h"
#include "harness/measure/process_merge.h"
#include "harness/stats/statistics.h"
#include "harness/util/format_number.h"

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

namespace {

// A figure from per-process values: their median (one wild process moves it little), or
// the run's median and interval where there is one process.
FigureValue figure_of(std::vector<double> per_process, double run_median, Interval interval) {
  if (per_process.size() >= 2) return {percentile(per_process, 0.5), std::move(per_process), {}};
  return {run_median, {}, interval};
}

}  // namespace

JudgedFigures judged_figures(const CaseResult& r) {
  const std::vector<double> e = process_floors(r.engine), ref = process_floors(r.reference);
  std::vector<double> speedups;
  if (e.size() == ref.size())
    for (size_t p = 0; p < e.size(); ++p) speedups.push_back(e[p] > 0 ? ref[p] / e[p] : kNaN);
  return {figure_of(e, r.engine.stats.median, {r.engine.stats.boot_ci_low, r.engine.stats.boot_ci_high}),
          figure_of(ref, r.reference.stats.median, {r.reference.stats.boot_ci_low, r.reference.stats.boot_ci_high}),
          figure_of(std::move(speedups), r.speedup, {r.speedup_ci_low, r.speedup_ci_high})};
}

void append_to_history(CaseHistory& h, const CaseResult& r) {
  const JudgedFigures f = judged_figures(r);
  h.engine.push_back(f.engine.value);
  h.reference.push_back(f.reference.value);
  h.speedup.push_back(f.speedup.value);
}

namespace {

// The verdict on a change of log size `d` whose standard error is `se` (with `df` degrees of
// freedom; NaN: normal): beyond its noise at alpha and at least min_effect, a change; else
// noisy where the noise would hide min_effect, unchanged where it would not.
void decide(FigureChange& c, double d, double se, double df, bool higher_is_better, const CompareOptions& o) {
  const double q = 1 - o.alpha / 2;
  const double reach = (std::isfinite(df) ? student_t_quantile(q, df) : normal_quantile(q)) * se;
  c.noise = se;
  c.detectable = std::exp(reach) - 1;
  c.change_ci = {std::exp(d - reach) - 1, std::exp(d + reach) - 1};
  const bool beyond = std::fabs(d) > reach && std::fabs(c.change) >= o.min_effect;
  if (beyond)
    c.verdict = (higher_is_better ? d < 0 : d > 0) ? Verdict::kSlower : Verdict::kFaster;
  else if (c.detectable > o.min_effect)
    c.verdict = Verdict::kNoisy;
  else
    c.verdict = Verdict::kUnchanged;
}

}  // namespace

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

  // Between processes: the pooled robust spread of the per-process logs of both runs. The
  // figures are medians over processes, whose standard error is sqrt(pi/2) times a mean's.
  double se = kNaN, df = kNaN;
  const size_t kb = base.per_process.size(), kc = cand.per_process.size();
  const double sb = robust_log_spread(base.per_process), sc = robust_log_spread(cand.per_process);
  if (std::isfinite(sb) && std::isfinite(sc)) {
    constexpr double kMedianEfficiency = 1.2533;  // sqrt(pi / 2)
    df = static_cast<double>(kb + kc - 2);
    const double pooled = ((kb - 1) * sb * sb + (kc - 1) * sc * sc) / df;
    se = kMedianEfficiency * std::sqrt(pooled * (1.0 / kb + 1.0 / kc));
    c.noise_source = "processes (" + std::to_string(kb) + "+" + std::to_string(kc) + ")";
  } else {
    // One process: only the samples' interval is known, which says nothing of the next process.
    auto side = [](const Interval& i) {
      return i.low > 0 && i.high >= i.low ? std::log(i.high / i.low) / (2 * normal_quantile(0.975)) : kNaN;
    };
    se = std::hypot(side(base.interval), side(cand.interval));
    c.noise_source = "samples (1 process)";
  }
  // Between runs: how far this case's run-level figure moved over the earlier runs. Both
  // estimate how far two runs' figures differ; they are pooled by their degrees of
  // freedom, so a handful of runs neither swamps the processes nor is ignored.
  std::vector<double> recent(history.end() - static_cast<std::ptrdiff_t>(std::min(history.size(), kMaxHistory)),
                             history.end());
  // Robust, like the processes' spread: one night the machine was busy does not make every
  // later comparison noisy.
  const double sh = recent.size() >= kMinHistory ? robust_log_spread(recent) : kNaN;
  if (std::isfinite(sh)) {
    const double runs_var = 2 * sh * sh, runs_df = static_cast<double>(recent.size() - 1);  // the difference of two runs
    const std::string runs = "runs (" + std::to_string(recent.size()) + ")";
    if (std::isfinite(se) && std::isfinite(df)) {
      se = std::sqrt((df * se * se + runs_df * runs_var) / (df + runs_df));
      df += runs_df;
      c.noise_source += " and " + runs;
    } else if (!std::isfinite(se) || student_t_quantile(q, runs_df) * std::sqrt(runs_var) > normal_quantile(q) * se) {
      se = std::sqrt(runs_var);
      df = runs_df;
      c.noise_source = runs;
    }
  }
  if (!std::isfinite(se)) {
    c.noise_source = "unknown";
    return c;
  }
  decide(c, d, se, df, higher_is_better, o);
  return c;
}

FigureChange judge_paired_figure(const FigureValue& base, const FigureValue& cand, bool higher_is_better,
                                 const CompareOptions& o) {
  FigureChange c;
  c.baseline = base.value;
  c.candidate = cand.value;
  std::vector<double> ratios;  // candidate / baseline, process by process
  for (size_t p = 0; p < base.per_process.size() && p < cand.per_process.size(); ++p)
    if (base.per_process[p] > 0 && cand.per_process[p] > 0) ratios.push_back(cand.per_process[p] / base.per_process[p]);
  c.noise_source = "paired processes (" + std::to_string(ratios.size()) + ")";
  if (ratios.size() < 3) {
    c.change = base.value > 0 ? cand.value / base.value - 1 : kNaN;
    c.noise_source += ": too few pairs";
    return c;  // noisy: nothing to judge the change against
  }
  // The median of the pairs' log ratios, its noise the robust spread of those ratios: a
  // pair the machine hit, on one side only, moves neither.
  const double d = std::log(percentile(ratios, 0.5));
  c.change = std::expm1(d);
  constexpr double kMedianEfficiency = 1.2533;  // sqrt(pi / 2)
  const double n = static_cast<double>(ratios.size());
  decide(c, d, kMedianEfficiency * robust_log_spread(ratios) / std::sqrt(n), n - 1, higher_is_better, o);
  return c;
}

namespace {

// The reference as a control for the engine's time. Between runs on one machine, most of
// what moves the engine moves the reference too (a clock or a neighbour acts on both), so
// an engine time's own history spread mostly measures the machine. Where the reference
// held still (moved less than min_effect) and the speedup moved beyond its noise the way
// the engine did, the engine moved by itself: it is judged at the speedup's noise, which
// holds the executors' own noise and not the machine's.
void control_engine_by_reference(CaseJudgement& j, const CompareOptions& o) {
  FigureChange& e = j.engine;
  const FigureChange& s = j.speedup;
  if (is_change(e.verdict) || !is_change(s.verdict) || !std::isfinite(s.noise)) return;
  const bool engine_slower = e.change > 0;
  if (engine_slower != (s.verdict == Verdict::kSlower)) return;
  if (std::fabs(e.change) < o.min_effect || !(std::fabs(j.reference.change) < o.min_effect)) return;
  const double reach = std::log1p(s.detectable), d = std::log1p(e.change);
  if (!(std::fabs(d) > reach)) return;
  e.verdict = s.verdict;
  e.noise = s.noise;
  e.detectable = s.detectable;
  e.change_ci = {std::exp(d - reach) - 1, std::exp(d + reach) - 1};
  e.noise_source = "the speedup's " + s.noise_source + ", the reference held still (" +
                   signed_percent(j.reference.change) + ")";
}

}  // namespace

namespace {

// The two sides of a paired A/B run (run --against): their processes alternated ABBA, so
// each pair shared the machine's minutes and the pairs' differences cancel its drift. The
// speedup is judged first, as between runs: each process's own ratio also cancels what
// that process's memory layout did to both executors, which the engine time's pairs keep
// (a ResNet's engine pairs spread 2-4x its speedup pairs here). Where the reference itself
// differs between the two builds (shared kernels changed), the speedup would carry that,
// and the engine time is judged instead; an engine move the speedup did not show is the
// engine's verdict too. A disturbance hit both sides of a pair, so it is named only.
CaseJudgement judge_paired_case(const CaseResult& base, const CaseResult& cand, const JudgedFigures& b,
                                const JudgedFigures& c, const CompareOptions& o) {
  CaseJudgement j;
  j.engine = judge_paired_figure(b.engine, c.engine, false, o);
  j.reference = judge_paired_figure(b.reference, c.reference, false, o);
  j.speedup = judge_paired_figure(b.speedup, c.speedup, true, o);
  // The pairs' own spread is the noise judged here; a side's interval wider than its
  // target (flagged noisy) says nothing about how far the pairs agree, so it is named only.
  const Verdict s = j.speedup.verdict, e = j.engine.verdict;
  std::string on;
  if (is_change(j.reference.verdict)) {
    j.verdict = e;
    on = "on the engine time: the reference differs between the builds";
  } else if (is_change(s) || !is_change(e)) {
    j.verdict = s == Verdict::kNoisy && e == Verdict::kUnchanged ? e : s;
    on = "on the speedup";
  } else {
    j.verdict = e;
    on = "on the engine time, beyond its noise where the speedup's was not";
  }
  j.reason = "paired, judged " + on + ": speedup " + change_text(j.speedup) + ", engine " + change_text(j.engine) +
             ", reference " + change_text(j.reference) + " (" + j.engine.noise_source + ")";
  if (base.noisy || cand.noisy) j.reason += "; a side flagged noisy when timed";
  const std::string& disturbed = cand.disturbed.empty() ? base.disturbed : cand.disturbed;
  if (!disturbed.empty()) j.reason += "; disturbed when timed (both sides alike): " + disturbed;
  return j;
}

// Two GPU cases timed on GPUs set up differently (another board, driver, power limit, ECC,
// persistence, MIG or clock limit) differ by the machine as much as by the code: whatever
// the figures say, the verdict is the environment, naming the differences.
void judge_gpu_setup(CaseJudgement& j, const CaseResult& base, const CaseResult& cand) {
  if (!base.gpu || !cand.gpu) return;
  const std::vector<std::string> differences = gpu_setup_differences(base.gpu->setup, cand.gpu->setup);
  if (differences.empty()) return;
  std::string named;
  for (const std::string& d : differences) named += (named.empty() ? "" : ", ") + d;
  j.verdict = Verdict::kEnvironment;
  j.reason = "GPU setup changed (" + named + "): " + j.reason;
}

CaseJudgement judge_unpaired_case(const CaseResult& base, const CaseResult& cand, const CaseHistory* history,
                                  bool same_machine, const CompareOptions& o) {
  static const CaseHistory kNone;
  const CaseHistory& h = history ? *history : kNone;
  CaseJudgement j;
  const JudgedFigures b = judged_figures(base), c = judged_figures(cand);
  j.engine = judge_figure(b.engine, c.engine, h.engine, false, o);
  j.reference = judge_figure(b.reference, c.reference, h.reference, false, o);
  j.speedup = judge_figure(b.speedup, c.speedup, h.speedup, true, o);
  j.speedup_only = !same_machine && !o.cross_host;
  if (!j.speedup_only) control_engine_by_reference(j, o);
  const std::string speedup_text = "speedup " + signed_percent(j.speedup.change) + " (noise ±" + format_number("%.1f%%", 100 * j.speedup.detectable) + ")";
  const std::string times_text = "engine " + signed_percent(j.engine.change) + ", reference " + signed_percent(j.reference.change);

  const Verdict s = j.speedup.verdict, e = j.engine.verdict;
  // The reference runs the same code in both runs: when it moved by min_effect or more, the
  // machine changed under the case. The speedup (the engine against the reference) takes out
  // what the machine did to both, so a speedup change beyond its noise is still the engine's,
  // except where the two cannot be told apart: the executors moved in opposite directions,
  // each beyond its noise (no machine-wide change does that, and the reference's code did
  // not change), or the reference moved further than it ever did between the earlier runs
  // (a machine that changed that much acts on the two unequally). Measured on a 2-core VM:
  // an A/A pair in a disturbed stretch had the reference +17%, the engine +40%.
  const double reference_move = std::fabs(std::log1p(j.reference.change));
  const bool machine_moved = !j.speedup_only && reference_move >= std::log1p(o.min_effect);
  const bool opposite = is_change(e) && is_change(j.reference.verdict) &&
                        std::signbit(j.reference.change) != std::signbit(j.engine.change);
  // The largest move between consecutive earlier runs: what the machine alone has done.
  auto widest_step_of = [](const std::vector<double>& runs) {
    if (runs.size() < kMinHistory) return kNaN;
    double widest = 0;
    for (size_t i = 1; i < runs.size(); ++i) widest = std::max(widest, std::fabs(std::log(runs[i] / runs[i - 1])));
    return widest;
  };
  const double widest_step = widest_step_of(h.reference), widest_speedup_step = widest_step_of(h.speedup);
  // Without enough history nothing says how far the reference moves on its own here, and a
  // moved reference stays the environment, as measured in A/A runs (below). A machine that
  // moves the reference that far also moves the speedup (it acts on the two unequally): on a
  // 2-core EPYC VM the reference moved 30-45% between A/A runs and the speedup 10-16% with
  // it, beyond the speedup's robust noise. So the speedup is put on the engine only where it
  // moved further than it ever did between the earlier runs.
  const bool beyond_history = !std::isfinite(widest_step) || reference_move > widest_step;
  const bool speedup_beyond_history =
      std::isfinite(widest_speedup_step) && std::fabs(std::log1p(j.speedup.change)) > widest_speedup_step;
  const std::string disturbed = cand.disturbed.empty() ? base.disturbed : cand.disturbed;
  if (!disturbed.empty()) {
    j.verdict = Verdict::kEnvironment;
    j.reason = std::string(cand.disturbed.empty() ? "baseline" : "candidate") + " disturbed when timed (" + disturbed +
               "): " + speedup_text + ", " + times_text;
  } else if (is_change(s) && machine_moved && (opposite || beyond_history || !speedup_beyond_history)) {
    j.verdict = Verdict::kEnvironment;
    j.reason = "reference " + signed_percent(j.reference.change) +
               (opposite ? " while the engine moved " + signed_percent(j.engine.change) +
                               ": opposite moves, each beyond its noise, which neither the machine nor the engine alone explains"
                : std::isfinite(widest_step) && beyond_history
                    ? ", further than between any two of its " + std::to_string(h.reference.size()) + " earlier runs (" +
                          format_number("%.1f%%", 100 * std::expm1(widest_step)) +
                          "): the machine (or the reference itself) changed too much to put the " + speedup_text +
                          " on the engine"
                : std::isfinite(widest_step)
                    ? ": the machine moved, and the " + speedup_text + " lies within the " +
                          format_number("%.1f%%", 100 * std::expm1(widest_speedup_step)) +
                          " the speedup has moved between two earlier runs; engine " + signed_percent(j.engine.change)
                    : ": the machine (or the reference itself) changed, and without " + std::to_string(kMinHistory) +
                          " earlier runs nothing says how far it moves on its own, so the " + speedup_text +
                          " cannot be put on the engine; engine " + signed_percent(j.engine.change));
  } else if (is_change(s) && machine_moved) {
    j.verdict = s;
    j.reason = speedup_text + " beyond its noise: the engine " + signed_percent(j.engine.change) +
               " against the reference's " + signed_percent(j.reference.change) + ", the part of its move the machine does not explain";
  } else if (is_change(s)) {
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

}  // namespace

namespace {
CaseJudgement judge_load_case(const CaseResult& base, const CaseResult& cand, const CompareOptions& o) {
  CaseJudgement j;
  j.load = judge_load(base, cand, o.alpha, o.min_effect);
  const LoadJudgement& l = *j.load;
  j.verdict = l.verdict == "slower" ? Verdict::kSlower : l.verdict == "faster" ? Verdict::kFaster
              : l.verdict == "unchanged" ? Verdict::kUnchanged : Verdict::kNoisy;
  j.reason = "load: " + l.reason;
  j.engine.baseline = l.median.baseline;
  j.engine.candidate = l.median.candidate;
  j.engine.change = l.median.change;
  j.engine.change_ci = l.median.change_ci;
  j.engine.noise_source = "query latencies (bootstrap)";
  j.speedup.noise_source = j.engine.noise_source;
  return j;
}
}  // namespace

CaseJudgement judge_case(const CaseResult& base, const CaseResult& cand, const CaseHistory* history,
                         bool same_machine, const CompareOptions& o) {
  if (base.load && cand.load) return judge_load_case(base, cand, o);
  CaseJudgement j = o.paired ? judge_paired_case(base, cand, judged_figures(base), judged_figures(cand), o)
                             : judge_unpaired_case(base, cand, history, same_machine, o);
  judge_gpu_setup(j, base, cand);
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
    } else if (c.candidate->status == CaseStatus::kError) {
      c.note = "error in the candidate: " + c.candidate->error;
    } else if (c.baseline->status == CaseStatus::kError) {
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
    std::map<std::string, const CaseResult*> last;  // a key listed twice: its last result
    const std::vector<StoredCase> cases = store.load_cases(run->id, CaseDetail::kTiming);
    for (const StoredCase& sc : cases)
      if (sc.result.status != CaseStatus::kError) last[sc.result.spec.case_key()] = &sc.result;
    if (run == runs.rbegin())
      for (const auto& [key, r] : last) wanted.insert(key);
    for (const auto& [key, r] : last) {
      if (!wanted.count(key)) continue;
      CaseHistory& h = history[key];
      if (h.engine.size() == kMaxHistory) continue;
      append_to_history(h, *r);
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
  c.paired = store.path() == baseline_store.path() && store.load_run(run).info.paired_with == baseline_run;
  return c;
}

std::string change_text(const FigureChange& f) {
  return signed_percent(f.change) + (std::isfinite(f.detectable) ? format_number(" ±%.1f%%", 100 * f.detectable) : " ±?");
}

}  // namespace fb
