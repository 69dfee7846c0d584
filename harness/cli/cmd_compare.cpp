// fusebench compare: a run against a baseline, case by case — the change in the median
// with its 95% interval and a verdict (faster, slower, unchanged, noisy) from a
// Mann–Whitney U test plus a minimum effect size. Exit 0; with --fail-on-regression, 1
// when a case is slower, else 3 when one is noisy.
#include <cstdio>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/run_selection.h"
#include "harness/compare.h"
#include "harness/gate.h"

namespace fb::cli {

namespace {

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.2f%%", 100 * v);
  return buf;
}

std::string num(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

int cmd_compare(int argc, char** argv) {
  cxxopts::Options opts("fusebench compare",
                        "Compare a run against a baseline: per case, the change in the median with its 95% interval\n"
                        "and a verdict (faster, slower, unchanged, noisy). Cases are matched by case key.");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "run", "the run to judge (default: the latest)", cxxopts::value<int64_t>())(
      "baseline", "baseline run id (default: the run before --run, or the latest of --baseline-db)",
      cxxopts::value<int64_t>())("baseline-db", "take the baseline from this database instead",
                                 cxxopts::value<std::string>())(
      "executor", "whose samples to compare: engine or reference",
      cxxopts::value<std::string>()->default_value("engine"))(
      "alpha", "significance level of the Mann–Whitney test", cxxopts::value<double>()->default_value("0.01"))(
      "min-effect", "smallest relative change of the median that counts (0.02 = 2%)",
      cxxopts::value<double>()->default_value("0.02"))(
      "fail-on-regression", "exit 1 when a case is slower, 3 when none is but one is noisy");
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  CompareOptions o;
  o.alpha = args["alpha"].as<double>();
  o.min_effect = args["min-effect"].as<double>();
  o.executor = args["executor"].as<std::string>();
  if (!(o.alpha > 0 && o.alpha < 1)) throw Error("--alpha must lie between 0 and 1");
  if (!(o.min_effect >= 0)) throw Error("--min-effect must be >= 0");
  if (o.executor != "engine" && o.executor != "reference")
    throw Error("--executor must be engine or reference, got '" + o.executor + "'");

  ResultStore store = open_existing_store(args.count("db") ? args["db"].as<std::string>() : "");
  const int64_t run = pick_run(store, args.count("run") ? std::optional(args["run"].as<int64_t>()) : std::nullopt);
  std::optional<ResultStore> other;
  if (args.count("baseline-db")) other.emplace(open_existing_store(args["baseline-db"].as<std::string>(), "--baseline-db"));
  const ResultStore& base_store = other ? *other : store;
  std::optional<int64_t> base_run;
  if (args.count("baseline")) base_run = pick_run(base_store, args["baseline"].as<int64_t>());
  else if (other) base_run = pick_run(*other, std::nullopt);
  else base_run = run_before(store, run);
  if (!base_run)
    throw Error(store.path() + ": run " + std::to_string(run) + " has no run before it to compare with; "
                "give --baseline RUN or --baseline-db FILE");

  const std::vector<CaseComparison> rows = compare_runs(base_store.load_cases(*base_run), store.load_cases(run), o);
  const std::string base_name = (other ? other->path() + " " : std::string()) + "run " + std::to_string(*base_run);
  std::cout << "compare: run " << run << " against " << base_name << " (" << o.executor
            << " median; Mann–Whitney alpha " << o.alpha << ", min effect " << num("%.1f%%", 100 * o.min_effect)
            << ")\n";
  std::cout << "verdict    change    95% interval            baseline ms  this ms      p        case\n";
  int slower = 0, faster = 0, unchanged = 0, noisy = 0, unmatched = 0;
  for (const CaseComparison& c : rows) {
    const std::string name = c.label + "  [" + c.case_key + "]";
    if (!c.comparison) {
      ++unmatched;
      std::cout << pad("-", 11) << pad("", 77) << name << "  (" << c.note << ")\n";
      continue;
    }
    const SampleComparison& s = *c.comparison;
    switch (s.verdict) {
      case Verdict::kSlower: ++slower; break;
      case Verdict::kFaster: ++faster; break;
      case Verdict::kUnchanged: ++unchanged; break;
      case Verdict::kNoisy: ++noisy; break;
    }
    std::cout << pad(verdict_name(s.verdict), 11) << pad(pct(s.change), 10)
              << pad("[" + pct(s.change_ci.low) + ", " + pct(s.change_ci.high) + "]", 24)
              << pad(num("%.4f", s.baseline_median), 13) << pad(num("%.4f", s.candidate_median), 13)
              << pad(s.p_value < 1e-6 ? std::string("<1e-6") : num("%.2g", s.p_value), 9) << name
              << ((c.baseline->noisy || c.candidate->noisy) ? "  (flagged noisy)" : "") << "\n";
  }
  std::cout << "compare: " << slower << " slower, " << faster << " faster, " << unchanged << " unchanged, " << noisy
            << " noisy";
  if (unmatched) std::cout << ", " << unmatched << " not compared";
  std::cout << "\n";
  if (!args.count("fail-on-regression")) return kExitOk;
  if (slower) return kExitVerdictFailed;
  return noisy ? kExitInconclusive : kExitOk;
}

}  // namespace fb::cli
