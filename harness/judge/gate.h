// The CI gate: judges every case of a run against rules — minimum speedup over the
// reference, maximum regression against a baseline, maximum accuracy error — taken from the
// command line or else from the scenario's gate block stored with each case. A rule that
// could only be judged on a case flagged noisy is inconclusive rather than passed or failed,
// so a noisy CI machine neither lets a regression through nor blocks a good change.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "harness/judge/compare.h"
#include "harness/store/result_store.h"

namespace fb {

// Exit codes of every command that gives a verdict (gate; compare --fail-on-regression).
constexpr int kExitPass = 0;
constexpr int kExitFail = 1;
constexpr int kExitInconclusive = 3;  // 2 is an error, as for every command

enum class Outcome { kPass, kFail, kInconclusive };
const char* outcome_name(Outcome o);  // "pass", "FAIL", "INCONCLUSIVE"
int exit_code_of(Outcome o);

// Rules given on the command line; each one set replaces the scenario's rule of that name
// for every case.
struct GateRules {
  std::optional<double> min_speedup, max_regression, max_abs_err;
  std::optional<double> min_valid_rate, max_claimed_ms;  // load cases only
};

struct RuleResult {
  std::string rule;    // "status", "min_speedup", "max_regression", "max_abs_err", "min_valid_rate", "max_claimed_ms"
  Outcome outcome = Outcome::kPass;
  std::string detail;  // the numbers behind it, for the summary and JUnit
};

struct CaseVerdict {
  CaseResult result;  // the gated case (summary and samples)
  std::string case_key;
  Outcome outcome = Outcome::kPass;  // the worst of its rules
  std::vector<RuleResult> rules;     // every rule that applied
};

struct GateReport {
  int64_t run_id = 0;
  std::string baseline;  // "run 6" or "baseline.db run 3"; "" when none
  std::vector<CaseVerdict> cases;
  Outcome outcome = Outcome::kPass;
  int passed = 0, failed = 0, inconclusive = 0;
};

// Judges `cases`. `baseline` (may be null) holds the baseline run's cases for
// max_regression, matched by case key; a case without a baseline is not judged on it.
// max_regression follows compare's rules (judge_case) with the limit as the change to
// detect, against `history` (may be null) and, when the machines differ, on speedup only.
GateReport evaluate_gate(const std::vector<StoredCase>& cases, const GateRules& rules,
                         const std::vector<StoredCase>* baseline, const CompareOptions& compare = {},
                         const HistoryByKey* history = nullptr, bool same_machine = true);

}  // namespace fb
