#include "harness/judge/bisect.h"

#include "engine/ir/error.h"

namespace fb {
namespace {

std::string engine_change(const CaseJudgement& j) {
  return "engine " + change_text(j.engine) + " (" + verdict_name(j.verdict) + ")";
}

}  // namespace

BisectOutcome bisect_commits(size_t n, const std::function<CaseJudgement(size_t)>& time_against_good,
                             const std::function<std::string(size_t)>& name) {
  FB_CHECK(n >= 2, "bisect needs a good and a bad commit");
  BisectOutcome out;
  const auto timed = [&](size_t i) -> const CaseJudgement& {
    out.steps.push_back({i, time_against_good(i)});
    return out.steps.back().judgement;
  };
  out.last_good = 0;
  out.first_bad = n - 1;
  const CaseJudgement bad = timed(n - 1);
  if (bad.verdict == Verdict::kUnchanged || bad.verdict == Verdict::kFaster) {
    out.end = BisectEnd::kNoRegression;
    out.message = "the bad end " + name(n - 1) + " is not slower than the good end " + name(0) + ": " +
                  engine_change(bad) + "; nothing to bisect";
    return out;
  }
  if (bad.verdict != Verdict::kSlower) {
    out.end = BisectEnd::kWithinNoise;
    out.message = "the bad end " + name(n - 1) + " against the good end " + name(0) + " is within the case's noise: " +
                  engine_change(bad) + " (" + bad.reason + "); time it with more processes, or bisect a larger change";
    return out;
  }
  while (out.first_bad - out.last_good > 1) {
    const size_t mid = out.last_good + (out.first_bad - out.last_good) / 2;
    Verdict v = timed(mid).verdict;
    if (v != Verdict::kSlower && v != Verdict::kUnchanged && v != Verdict::kFaster) v = timed(mid).verdict;  // once more
    if (v == Verdict::kSlower) out.first_bad = mid;
    else if (v == Verdict::kUnchanged || v == Verdict::kFaster) out.last_good = mid;
    else {
      out.end = BisectEnd::kInconclusive;
      out.message = name(mid) + " was within the case's noise twice (" + engine_change(out.steps.back().judgement) +
                    "): the first bad commit is one of " + std::to_string(out.first_bad - out.last_good) + " after " +
                    name(out.last_good) + ", up to " + name(out.first_bad);
      return out;
    }
  }
  out.end = BisectEnd::kFound;
  out.message = "first bad commit: " + name(out.first_bad) + " (the last good one: " + name(out.last_good) + ")";
  // A regression that grew over several commits: the first bad one holds only part of it.
  for (const BisectStep& s : out.steps)
    if (s.commit == out.first_bad && s.commit != n - 1 && s.judgement.engine.change < bad.engine.change / 2)
      out.message += "; it is slower by " + change_text(s.judgement.engine) + " of the bad end's " +
                     change_text(bad.engine) + ": later commits add to it";
  return out;
}

}  // namespace fb
