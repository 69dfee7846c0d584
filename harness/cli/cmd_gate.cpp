// fusebench gate: the CI verdict on a stored run. Every case must have run without error
// and within its accuracy tolerance, and meet the rules given on the command line or in
// its scenario's gate block (minimum speedup, maximum regression against a baseline,
// maximum accuracy error). Exit 0 pass, 1 fail, 2 error, 3 inconclusive.
#include <algorithm>
#include <cstdio>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/run_selection.h"
#include "harness/judge/gate.h"
#include "harness/util/format_number.h"
#include "reports/junit.h"

namespace fb::cli {

static_assert(kExitPass == kExitOk && kExitFail == kExitVerdictFailed && fb::kExitInconclusive == cli::kExitInconclusive,
              "the gate's exit codes are the command line's");

namespace {

// One screen: this many failing or inconclusive cases are named, the rest counted.
constexpr size_t kMaxListed = 20;

std::optional<double> optional_arg(const cxxopts::ParseResult& args, const char* name) {
  if (!args.count(name)) return std::nullopt;
  return args[name].as<double>();
}

}  // namespace

int cmd_gate(int argc, char** argv) {
  cxxopts::Options opts("fusebench gate",
                        "The CI verdict on a stored run: exit 0 pass, 1 fail, 2 error, 3 inconclusive (a rule that\n"
                        "could only be judged on a case flagged noisy). Rules given here replace the scenario's.");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "run", "run id (default: the latest run)", cxxopts::value<int64_t>())(
      "min-speedup", "every case's engine at least this many times faster than the reference", cxxopts::value<double>())(
      "max-regression", "at most this much slower than the baseline (0.05 = 5%), judged as compare judges: "
      "the speedup beyond its noise between processes and runs",
      cxxopts::value<double>())("cross-host", "judge engine times even when the baseline ran on another machine")("max-abs-err", "largest |engine - reference| output difference allowed",
                                cxxopts::value<double>())(
      "baseline", "baseline run id for max-regression (default: the run before, or the latest of --baseline-db)",
      cxxopts::value<int64_t>())("baseline-db", "take the baseline from this database", cxxopts::value<std::string>())(
      "junit", "also write the verdict as JUnit XML to this file", cxxopts::value<std::string>())(
      "min-valid-rate", "load cases: the share of their load runs that are valid, at least (1 = all)", cxxopts::value<double>())(
      "max-claimed-ms", "load cases: the percentile each claims (early stopping's estimate), at most this many ms",
      cxxopts::value<double>());
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  GateRules rules;
  rules.min_speedup = optional_arg(args, "min-speedup");
  if (args.count("max-regression")) rules.max_regression = args["max-regression"].as<double>();
  rules.max_abs_err = optional_arg(args, "max-abs-err");
  rules.min_valid_rate = optional_arg(args, "min-valid-rate");
  rules.max_claimed_ms = optional_arg(args, "max-claimed-ms");

  ResultStore store = open_existing_store(args.count("db") ? args["db"].as<std::string>() : "");
  const int64_t run = pick_run(store, args.count("run") ? std::optional(args["run"].as<int64_t>()) : std::nullopt);
  const std::vector<StoredCase> cases = store.load_cases(run);
  if (cases.empty()) throw Error(store.path() + ": run " + std::to_string(run) + " has no cases");

  // A baseline is loaded only when some case has a max_regression rule to judge.
  bool wants_baseline = rules.max_regression.has_value();
  for (const StoredCase& sc : cases) wants_baseline |= sc.result.spec.gate.max_regression.has_value();
  std::optional<ResultStore> other;
  if (args.count("baseline-db")) other.emplace(open_existing_store(args["baseline-db"].as<std::string>(), "--baseline-db"));
  std::vector<StoredCase> baseline;
  std::string baseline_name;
  HistoryByKey history;
  bool same_machine = true, paired = false;
  if (wants_baseline) {
    const ResultStore& bs = other ? *other : store;
    std::optional<int64_t> base_run;
    if (args.count("baseline")) base_run = pick_run(bs, args["baseline"].as<int64_t>());
    else if (other) base_run = pick_run(*other, std::nullopt);
    else if (const int64_t other_side = store.load_run(run).info.paired_with) base_run = other_side;
    else base_run = run_before(store, run);
    if (base_run && !other && *base_run == run)
      throw Error(store.path() + ": --baseline " + std::to_string(run) + " is the run being gated: a run compared with "
                  "itself says nothing about a regression; give the run it should be judged against");
    if (base_run) {
      baseline = bs.load_cases(*base_run);
      baseline_name = (other ? other->path() + " " : std::string()) + "run " + std::to_string(*base_run);
      JudgementContext context = judgement_context(store, run, bs, *base_run);
      history = std::move(context.history);
      same_machine = context.same_machine;
      paired = context.paired;
      if (paired)
        std::printf("gate: paired A/B run: max_regression judges each case against run %lld (%s) process by process\n",
                    static_cast<long long>(*base_run), bs.load_run(*base_run).info.timed_by.c_str());
      if (!same_machine)
        std::printf("gate: the baseline ran on another machine (%s); max_regression %s\n",
                    context.baseline_machine.c_str(),
                    args.count("cross-host") ? "judges times too (--cross-host)" : "judges the speedup only");
    }
  }
  CompareOptions compare;
  compare.cross_host = args.count("cross-host") > 0;
  compare.paired = paired;
  GateReport report =
      evaluate_gate(cases, rules, baseline_name.empty() ? nullptr : &baseline, compare, &history, same_machine);
  report.baseline = baseline_name;
  // An interrupted run, or one that lost an MPI worker, is missing cases: it cannot pass,
  // whatever the cases it holds say (mpirun --enable-recovery exits 0 even then).
  const bool unfinished = store.load_run(run).finished_at.empty();
  if (unfinished) {
    std::printf("gate: run %lld never finished (interrupted, or a worker was lost): its missing cases fail the gate; "
                "`fusebench run --resume` completes it\n",
                static_cast<long long>(run));
    report.outcome = Outcome::kFail;
  }

  // Every regression verdict, with the noise it was judged against, passed ones included.
  for (const CaseVerdict& v : report.cases)
    for (const RuleResult& rr : v.rules)
      if (rr.rule == "max_regression" && rr.outcome == Outcome::kPass)
        std::printf("%-13s %s  [%s]  %s: %s\n", outcome_name(rr.outcome), v.result.spec.label().c_str(),
                    v.case_key.c_str(), rr.rule.c_str(), rr.detail.c_str());
  size_t listed = 0;
  for (const CaseVerdict& v : report.cases) {
    if (v.outcome == Outcome::kPass) continue;
    if (++listed > kMaxListed) continue;
    for (const RuleResult& rr : v.rules) {
      if (rr.outcome == Outcome::kPass) continue;
      std::printf("%-13s %s  [%s]  %s: %s\n", outcome_name(rr.outcome), v.result.spec.label().c_str(), v.case_key.c_str(),
                  rr.rule.c_str(), rr.detail.c_str());
    }
  }
  if (listed > kMaxListed) std::printf("... and %zu more cases that did not pass\n", listed - kMaxListed);

  // Which rules applied: the command line's values, else each case's scenario block.
  auto rule_text = [](const char* name, const std::optional<double>& v, double scale, const char* f) {
    return std::string(name) + " " + (v ? format_number(f, *v * scale) : "from the scenario");
  };
  const std::string applied = rule_text("min speedup", rules.min_speedup, 1, "%.2fx") + "; " +
                              rule_text("max regression", rules.max_regression, 100, "%.1f%%") + "; " +
                              rule_text("max abs err", rules.max_abs_err, 1, "%.3g") +
                              // The load rules, where a case served a load (harness/load/load_settings.h).
                              (std::any_of(report.cases.begin(), report.cases.end(), [](const CaseVerdict& v) { return v.result.load.has_value(); })
                                   ? "; " + rule_text("min valid rate", rules.min_valid_rate, 1, "%.2f") + "; " +
                                         rule_text("max claimed", rules.max_claimed_ms, 1, "%g ms")
                                   : std::string());
  std::printf("gate: run %lld, %d of %zu cases pass, %d fail, %d inconclusive (%s%s) — %s\n",
              static_cast<long long>(run), report.passed, report.cases.size(), report.failed, report.inconclusive,
              applied.c_str(), baseline_name.empty() ? "" : ("; baseline " + baseline_name).c_str(),
              report.outcome == Outcome::kPass   ? "passed"
              : report.outcome == Outcome::kFail ? "FAILED"
                                                 : "INCONCLUSIVE");
  std::fflush(stdout);
  if (args.count("junit")) write_junit(report, args["junit"].as<std::string>());
  return exit_code_of(report.outcome);
}

}  // namespace fb::cli
