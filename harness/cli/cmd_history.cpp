// fusebench history: change points in each case's nightly series (one value per run, in
// the order the runs started), by E-divisive means with a seeded permutation test; for
// each change, the run where it began, the size of the step, and the verdict compare's rules
// give it (harness/judge/compare.h: the run where it began against the run before, with the runs
// before as history), so a step that engine and reference took together reads
// `environment`, not a regression.
#include <cstdio>
#include <cmath>
#include <limits>
#include <map>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/run_selection.h"
#include "harness/judge/compare.h"
#include "harness/judge/history.h"
#include "harness/stats/statistics.h"

namespace fb::cli {

namespace {

struct Series {
  int load_runs = 0, load_valid = 0;  // a load case's runs, and how many were valid
  std::string label;
  std::vector<double> values;
  std::vector<const StoredRun*> runs;
  CaseHistory figures;  // engine, reference and speedup of the same runs
};

// The case `key` of run `run_id`, with its samples; nullopt when absent or errored.
std::optional<CaseResult> load_case(const ResultStore& store, int64_t run_id, const std::string& key) {
  std::optional<CaseResult> found;
  for (StoredCase& sc : store.load_cases(run_id))
    if (sc.result.spec.case_key() == key && sc.result.status != CaseStatus::kError) found = std::move(sc.result);
  return found;
}


// A load case's figures (its reported step): the claimed percentile, or validity as 1 or 0
// (shifted by 1 so that an invalid run is still a point of the series).
double metric_of(const CaseResult& r, const std::string& metric) {
  if (metric == "claimed" || metric == "valid") {
    if (!r.load) return std::numeric_limits<double>::quiet_NaN();
    const LoadFigures& f = reported_step(*r.load).figures;
    return metric == "claimed" ? f.claimed_ms : f.valid ? 2.0 : 1.0;
  }
  if (metric == "engine") return r.engine.stats.median;
  if (metric == "reference") return r.reference.stats.median;
  return r.speedup;
}

}  // namespace

int cmd_history(int argc, char** argv) {
  cxxopts::Options opts("fusebench history",
                        "Find change points in each case's series over the runs of a database (E-divisive means,\n"
                        "permutation test): for each change, the run where it began and the step size.");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "case", "only cases whose key starts with this", cxxopts::value<std::string>())(
      "metric", "the series: engine (median ms), reference (median ms), speedup, or for load cases claimed (the claimed percentile, ms)",
      cxxopts::value<std::string>()->default_value("engine"))(
      "alpha", "significance level of the permutation test", cxxopts::value<double>()->default_value("0.01"))(
      "permutations", "permutations per test", cxxopts::value<int>()->default_value("199"))(
      "min-segment", "runs on each side of a change, at least", cxxopts::value<int>()->default_value("3"))(
      "seed", "seeds the permutations", cxxopts::value<uint64_t>()->default_value("1"));
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  const std::string metric = args["metric"].as<std::string>();
  if (metric != "engine" && metric != "reference" && metric != "speedup" && metric != "claimed")
    throw Error("--metric must be engine, reference, speedup or claimed, got '" + metric + "'");
  ChangePointOptions o;
  o.alpha = args["alpha"].as<double>();
  o.permutations = args["permutations"].as<int>();
  o.min_segment = args["min-segment"].as<int>();
  o.seed = args["seed"].as<uint64_t>();
  const std::string prefix = args.count("case") ? args["case"].as<std::string>() : "";

  ResultStore store = open_existing_store(args.count("db") ? args["db"].as<std::string>() : "");
  const std::vector<StoredRun> runs = store.list_runs();
  if (runs.empty()) throw Error(store.path() + ": holds no runs");

  // One series per case key, in the order keys first appear; a run contributes its last
  // result for a key, and nothing when the case errored there.
  std::vector<std::string> order;
  std::map<std::string, Series> by_key;
  for (const StoredRun& run : runs) {
    std::map<std::string, CaseResult> in_run;
    // With samples: each change is judged as compare judges, from the per-process figures.
    for (const StoredCase& sc : store.load_cases(run.id, CaseDetail::kTiming)) {
      const CaseResult& r = sc.result;
      const std::string key = r.spec.case_key();
      if (key.rfind(prefix, 0) != 0 || r.status == CaseStatus::kError) continue;
      const double v = metric_of(r, metric);
      if (!std::isfinite(v) || v <= 0) continue;
      in_run[key] = r;
      Series& s = by_key[key];
      if (s.label.empty()) order.push_back(key), s.label = r.spec.label();
    }
    for (const auto& [key, r] : in_run) {
      Series& s = by_key[key];
      if (r.load) ++s.load_runs, s.load_valid += reported_step(*r.load).figures.valid;
      s.values.push_back(metric_of(r, metric));
      s.runs.push_back(&run);
      append_to_history(s.figures, r);
    }
  }
  if (order.empty())
    throw Error(store.path() + (prefix.empty() ? ": no case has results" : ": no case key starts with '" + prefix + "'"));

  const char* unit = metric == "speedup" ? "x" : " ms";
  std::cout << "history: " << runs.size() << " runs in " << store.path() << ", " << metric
            << (metric == "speedup" ? "" : " median") << "; E-divisive, alpha " << o.alpha << ", " << o.permutations
            << " permutations, seed " << o.seed << "\n";
  int changes = 0;
  std::map<std::string, int> by_verdict;
  for (const std::string& key : order) {
    const Series& s = by_key[key];
    const std::vector<ChangePoint> found = e_divisive(s.values, o);
    changes += static_cast<int>(found.size());
    std::cout << s.label << "  [" << key << "]  " << s.values.size() << " runs (spread between runs: speedup "
              << format_number("%.1f%%", 100 * log_spread(s.figures.speedup)) << ", engine " << format_number("%.1f%%", 100 * log_spread(s.figures.engine))
              << "): ";
    if (s.load_runs > 0) {
      const auto [low, high] = wilson_interval(s.load_valid, s.load_runs);
      std::cout << "valid in " << s.load_valid << " of " << s.load_runs << " load runs (95% interval of the rate "
                << format_number("%.2f", low) << "-" << format_number("%.2f", high) << "); ";
    }
    if (s.values.size() < static_cast<size_t>(2 * o.min_segment)) {
      std::cout << "too few to judge\n";
      continue;
    }
    std::cout << (found.empty() ? "no change" : std::to_string(found.size()) + (found.size() == 1 ? " change" : " changes"))
              << "\n";
    for (const ChangePoint& cp : found) {
      const StoredRun& at = *s.runs[cp.index];
      std::cout << "  from run " << at.id << " (" << at.info.started_at << ", #" << cp.index + 1 << " in the series): "
                << format_number("%+.1f%%", 100 * cp.step) << "  (" << format_number("%.4f", cp.before) << " → " << format_number("%.4f", cp.after)
                << unit << ", p=" << format_number("%.3f", cp.p_value) << ")";
      // The step judged as compare judges it: its first run against the run before, with
      // the runs before that as history, on the same machine only.
      const StoredRun& before = *s.runs[cp.index - 1];
      const std::optional<CaseResult> a = load_case(store, before.id, key), b = load_case(store, at.id, key);
      if (a && b) {
        CaseHistory h;
        const auto upto = [&](const std::vector<double>& v) { return std::vector<double>(v.begin(), v.begin() + cp.index); };
        h = {upto(s.figures.engine), upto(s.figures.reference), upto(s.figures.speedup)};
        const bool same = machine_fingerprint(before.info) == machine_fingerprint(at.info);
        const CaseJudgement j = judge_case(*a, *b, &h, same, CompareOptions{});
        ++by_verdict[verdict_name(j.verdict)];
        std::cout << "  " << verdict_name(j.verdict) << ": " << j.reason;
      }
      std::cout << "\n";
    }
  }
  std::cout << "history: " << changes << (changes == 1 ? " change" : " changes") << " in " << order.size()
            << (order.size() == 1 ? " case" : " cases");
  std::string sep = " (";
  for (const auto& [verdict, n] : by_verdict) std::cout << sep << n << " " << verdict, sep = ", ";
  std::cout << (by_verdict.empty() ? "\n" : ")\n");
  return kExitOk;
}

}  // namespace fb::cli
