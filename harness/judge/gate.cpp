#include "harness/judge/gate.h"

#include <cmath>
#include <map>

#include "harness/util/format_number.h"

namespace fb {
namespace {

Outcome worse(Outcome a, Outcome b) {
  auto rank = [](Outcome o) { return o == Outcome::kFail ? 2 : o == Outcome::kInconclusive ? 1 : 0; };
  return rank(a) >= rank(b) ? a : b;
}

std::string noisy_why(const CaseResult& r) {
  return "noisy case (" + r.stop_reason + " before the CI target)";
}

// min_speedup: judged on the speedup's 95% interval, never on its median alone: pass where the
// whole interval lies at or above the minimum, FAIL where it lies below, INCONCLUSIVE where it
// straddles the minimum (the run cannot say which side the case is on), and on a disturbed
// case. A case without an interval (one sample) is judged on its median. Enough decimals to
// show which side.
RuleResult min_speedup_rule(const CaseResult& r, double min) {
  RuleResult out{"min_speedup", Outcome::kPass, ""};
  const int d = decimals_apart({r.speedup, r.speedup_ci_low, r.speedup_ci_high}, min);
  out.detail = "speedup " + fixed(r.speedup, d, "x") + " [" + fixed(r.speedup_ci_low, d, "x") + ", " +
               fixed(r.speedup_ci_high, d, "x") + "] vs min " + fixed(min, d, "x") +
               format_number(" (engine %.3f ms", r.engine.stats.median) +
               format_number(", reference %.3f ms)", r.reference.stats.median);
  const bool has_interval = std::isfinite(r.speedup_ci_low) && std::isfinite(r.speedup_ci_high);
  if (!r.disturbed.empty()) {
    // Threads short of cores slow the engine and the reference unequally (a spinning thread
    // pool waits for a core): the speedup itself is the machine's, either way.
    out.outcome = Outcome::kInconclusive;
    out.detail += ": the machine disturbed the timing";
  } else if (!has_interval) {
    out.outcome = r.speedup >= min ? Outcome::kPass : Outcome::kFail;
  } else if (r.speedup_ci_low >= min) {
    out.outcome = Outcome::kPass;
  } else if (r.speedup_ci_high < min) {
    out.outcome = Outcome::kFail;
  } else {
    out.outcome = Outcome::kInconclusive;
    out.detail += ": the interval straddles the minimum" + (r.noisy ? " on a " + noisy_why(r) : std::string());
  }
  return out;
}

// max_regression: judged by compare's rules (harness/judge/compare.h) with the limit as the change
// that must be detected: a case fails when it is `slower` — the speedup fell beyond its
// noise by at least the limit — and is inconclusive when the noise exceeds the limit or the
// machine moved (`environment`, `noisy`), so the gate neither lets a regression through nor
// blocks a change on a noisy night.
RuleResult max_regression_rule(const CaseResult& r, const CaseResult& base, double max, const CompareOptions& o,
                               const CaseHistory* history, bool same_machine) {
  RuleResult out{"max_regression", Outcome::kPass, ""};
  CompareOptions limit = o;
  limit.min_effect = max;
  const CaseJudgement j = judge_case(base, r, history, same_machine, limit);
  if (j.load) {
    out.detail = std::string(verdict_name(j.verdict)) + ": " + j.reason + ", max " + signed_percent(max);
    out.outcome = j.verdict == Verdict::kSlower ? Outcome::kFail : j.verdict == Verdict::kNoisy ? Outcome::kInconclusive : Outcome::kPass;
    return out;
  }
  out.detail = std::string(verdict_name(j.verdict)) + ": " + format_number("speedup %.2fx", j.speedup.candidate) +
               format_number(" vs %.2fx", j.speedup.baseline) + " " + signed_percent(j.speedup.change) + " (noise ±" +
               format_number("%.1f%%", 100 * j.speedup.detectable) + ")" +
               (j.speedup_only ? std::string(", different machines: speedup only")
                               : format_number(", engine %.3f ms", j.engine.candidate) + format_number(" vs %.3f ms ", j.engine.baseline) +
                                     signed_percent(j.engine.change) + " (noise ±" + format_number("%.1f%%", 100 * j.engine.detectable) + ")") +
               ", max " + signed_percent(max);
  if (j.verdict == Verdict::kSlower)
    out.outcome = Outcome::kFail;
  else if (j.verdict == Verdict::kNoisy || j.verdict == Verdict::kEnvironment)
    out.outcome = Outcome::kInconclusive;
  return out;
}

// The load rules (a load case's only: elsewhere they do not apply). The valid rate: the
// share of the case's load runs that were valid; a peak search's is whether it found one.
RuleResult min_valid_rate_rule(const LoadResult& load, bool peak_search, double min) {
  int64_t valid = 0, runs = 0;
  if (peak_search) {
    runs = 1;
    valid = !std::isnan(load.peak_qps);
  } else {
    for (const LoadStep& s : load.steps) ++runs, valid += s.figures.valid;
  }
  const double rate = runs ? double(valid) / double(runs) : 0;
  RuleResult out{"min_valid_rate", rate >= min ? Outcome::kPass : Outcome::kFail,
                 std::to_string(valid) + " of " + std::to_string(runs) + (peak_search ? " peak search found a valid rate" : " load runs valid") +
                     format_number(" (%.2f", rate) + format_number(") vs min %.2f", min)};
  if (!peak_search && valid < runs) out.detail += ": " + reported_step(load).figures.invalid;
  return out;
}

RuleResult max_claimed_rule(const LoadResult& load, double max) {
  const LoadFigures& f = reported_step(load).figures;
  const std::string pct = "p" + format_number("%g", 100 * f.percentile);
  if (std::isnan(f.claimed_ms))
    return {"max_claimed_ms", Outcome::kFail,
            "no " + pct + " claim: " + std::to_string(f.queries) + " queries, early stopping needs " + std::to_string(f.claim_needed)};
  return {"max_claimed_ms", f.claimed_ms <= max ? Outcome::kPass : Outcome::kFail,
          "claimed " + pct + format_number(" %.3f ms", f.claimed_ms) + format_number(" vs max %.3f ms", max)};
}

}  // namespace

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kFail: return "FAIL";
    case Outcome::kInconclusive: return "INCONCLUSIVE";
  }
  return "?";
}

int exit_code_of(Outcome o) {
  return o == Outcome::kFail ? kExitFail : o == Outcome::kInconclusive ? kExitInconclusive : kExitPass;
}

GateReport evaluate_gate(const std::vector<StoredCase>& cases, const GateRules& rules,
                         const std::vector<StoredCase>* baseline, const CompareOptions& compare,
                         const HistoryByKey* history, bool same_machine) {
  GateReport report;
  std::map<std::string, const CaseResult*> base_by_key;
  if (baseline)
    for (const StoredCase& sc : *baseline)
      if (sc.result.status != CaseStatus::kError) base_by_key[sc.result.spec.case_key()] = &sc.result;

  for (const StoredCase& sc : cases) {
    const CaseResult& r = sc.result;
    CaseVerdict v;
    v.result = r;
    v.case_key = r.spec.case_key();
    if (!report.run_id) report.run_id = sc.run_id;
    const GateConfig& g = r.spec.gate;
    const std::optional<double> min_speedup = rules.min_speedup ? rules.min_speedup : g.min_speedup;
    const std::optional<double> max_regression = rules.max_regression ? rules.max_regression : g.max_regression;
    const std::optional<double> max_abs_err = rules.max_abs_err ? rules.max_abs_err : g.max_abs_err;

    if (r.status == CaseStatus::kError) {
      v.rules.push_back({"status", Outcome::kFail, "error: " + r.error});
    } else {
      if (r.status != CaseStatus::kPassed)
        v.rules.push_back({"status", Outcome::kFail, "accuracy outside the tolerance: " + r.accuracy.detail});
      if (max_abs_err) {
        const double e = r.accuracy.max_abs_err;
        v.rules.push_back({"max_abs_err", e <= *max_abs_err ? Outcome::kPass : Outcome::kFail,  // NaN fails
                           format_number("max abs err %.3g", e) + format_number(" vs max %.3g", *max_abs_err)});
      }
      const std::optional<double> min_valid_rate = rules.min_valid_rate ? rules.min_valid_rate : g.min_valid_rate;
      const std::optional<double> max_claimed_ms = rules.max_claimed_ms ? rules.max_claimed_ms : g.max_claimed_ms;
      if (r.load && min_valid_rate) v.rules.push_back(min_valid_rate_rule(*r.load, r.spec.load.peak_search, *min_valid_rate));
      if (r.load && max_claimed_ms) v.rules.push_back(max_claimed_rule(*r.load, *max_claimed_ms));
      // A load case times no reference: it has no speedup to hold to a minimum.
      if (min_speedup && !r.load) v.rules.push_back(min_speedup_rule(r, *min_speedup));
      if (max_regression) {
        auto it = base_by_key.find(v.case_key);
        if (it != base_by_key.end()) {
          const CaseHistory* h = nullptr;
          if (history)
            if (auto hit = history->find(v.case_key); hit != history->end()) h = &hit->second;
          v.rules.push_back(max_regression_rule(r, *it->second, *max_regression, compare, h, same_machine));
        }
        else
          v.rules.push_back({"max_regression", Outcome::kPass,
                             baseline ? "no baseline for this case (new): not judged" : "no baseline run: not judged"});
      }
    }
    // A case the machine disturbed while it was timed (still, after its re-timings) is not
    // called passed: its pass is inconclusive, its failures stand.
    if (r.status != CaseStatus::kError && !r.disturbed.empty())
      v.rules.push_back({"disturbed", Outcome::kInconclusive, "disturbed when timed: " + r.disturbed});
    for (const RuleResult& rr : v.rules) v.outcome = worse(v.outcome, rr.outcome);
    report.outcome = worse(report.outcome, v.outcome);
    (v.outcome == Outcome::kPass ? report.passed : v.outcome == Outcome::kFail ? report.failed : report.inconclusive)++;
    report.cases.push_back(std::move(v));
  }
  return report;
}

}  // namespace fb
