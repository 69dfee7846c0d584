// The search behind `fusebench bisect`: which commit between a good and a bad one to time
// next, and when to stop. Each commit's case is timed paired against the good end and judged
// as compare judges a paired run (harness/judge/compare.h): `slower` puts the first bad commit at
// or before it, `unchanged` or `faster` after it. The bad end is timed first: when it is not
// slower than the good end beyond the noise, there is nothing to narrow and the search
// stops there. A commit that is neither (noisy, environment) is timed once more, then the
// search stops with the range it has. Kept apart from building and timing so that the
// decisions can be tested on made-up judgements.
#pragma once
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "harness/judge/compare.h"

namespace fb {

// One timing of commit `commit` (an index: 0 the good end, n - 1 the bad end) against the good end.
struct BisectStep {
  size_t commit = 0;
  CaseJudgement judgement;
};

enum class BisectEnd {
  kFound,         // first_bad is the first commit whose case is slower than the good end's
  kNoRegression,  // the bad end is not slower than the good end (unchanged or faster)
  kWithinNoise,   // the bad end's change is within the case's noise (noisy, environment)
  kInconclusive,  // a commit between was neither slower nor unchanged, twice: the first bad lies in (last_good, first_bad]
};

struct BisectOutcome {
  BisectEnd end = BisectEnd::kInconclusive;
  size_t last_good = 0, first_bad = 0;  // the range the search ended with
  std::vector<BisectStep> steps;        // in the order timed
  std::string message;                  // one line: the conclusion, or why the search stopped
};

// Times commits through `time_against_good(i)` (i in 1..n-1; n >= 2 commits, oldest first)
// and narrows to the first bad one in about log2(n) timings. `name(i)` names commit i in the
// message.
BisectOutcome bisect_commits(size_t n, const std::function<CaseJudgement(size_t)>& time_against_good,
                             const std::function<std::string(size_t)>& name);

}  // namespace fb
