// fusebench history: change points in each case's nightly series (one value per run, in
// the order the runs started), by E-divisive means with a seeded permutation test; for
// each change, the run where it began and the size of the step.
#include <cstdio>
#include <cmath>
#include <map>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/run_selection.h"
#include "harness/history.h"

namespace fb::cli {

namespace {

struct Series {
  std::string label;
  std::vector<double> values;
  std::vector<const StoredRun*> runs;
};

double metric_of(const CaseResult& r, const std::string& metric) {
  if (metric == "engine") return r.engine.stats.median;
  if (metric == "reference") return r.reference.stats.median;
  return r.speedup;
}

std::string num(const char* f, double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

int cmd_history(int argc, char** argv) {
  cxxopts::Options opts("fusebench history",
                        "Find change points in each case's series over the runs of a database (E-divisive means,\n"
                        "permutation test): for each change, the run where it began and the step size.");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "case", "only cases whose key starts with this", cxxopts::value<std::string>())(
      "metric", "the series: engine (median ms), reference (median ms) or speedup",
      cxxopts::value<std::string>()->default_value("engine"))(
      "alpha", "significance level of the permutation test", cxxopts::value<double>()->default_value("0.01"))(
      "permutations", "permutations per test", cxxopts::value<int>()->default_value("199"))(
      "min-segment", "runs on each side of a change, at least", cxxopts::value<int>()->default_value("3"))(
      "seed", "seeds the permutations", cxxopts::value<uint64_t>()->default_value("1"));
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  const std::string metric = args["metric"].as<std::string>();
  if (metric != "engine" && metric != "reference" && metric != "speedup")
    throw Error("--metric must be engine, reference or speedup, got '" + metric + "'");
  ChangePointOptions o;
  o.alpha = args["alpha"].as<double>();
  o.permutations = args["permutations"].as<int>();
  o.min_segment = args["min-segment"].as<int>();
  o.seed = args["seed"].as<uint64_t>();
  if (!(o.alpha > 0 && o.alpha < 1)) throw Error("--alpha must lie between 0 and 1");
  if (o.permutations < 19) throw Error("--permutations must be at least 19");
  if (o.min_segment < 2) throw Error("--min-segment must be at least 2");
  const std::string prefix = args.count("case") ? args["case"].as<std::string>() : "";

  ResultStore store = open_existing_store(args.count("db") ? args["db"].as<std::string>() : "");
  const std::vector<StoredRun> runs = store.list_runs();
  if (runs.empty()) throw Error(store.path() + ": holds no runs");

  // One series per case key, in the order keys first appear; a run contributes its last
  // result for a key, and nothing when the case errored there.
  std::vector<std::string> order;
  std::map<std::string, Series> by_key;
  for (const StoredRun& run : runs) {
    std::map<std::string, double> in_run;
    for (const StoredCase& sc : store.load_cases(run.id, CaseDetail::kSummary)) {
      const CaseResult& r = sc.result;
      const std::string key = r.spec.case_key();
      if (key.rfind(prefix, 0) != 0 || r.status == "error") continue;
      const double v = metric_of(r, metric);
      if (!std::isfinite(v) || v <= 0) continue;
      in_run[key] = v;
      Series& s = by_key[key];
      if (s.label.empty()) order.push_back(key), s.label = r.spec.label();
    }
    for (const auto& [key, v] : in_run) {
      by_key[key].values.push_back(v);
      by_key[key].runs.push_back(&run);
    }
  }
  if (order.empty())
    throw Error(store.path() + (prefix.empty() ? ": no case has results" : ": no case key starts with '" + prefix + "'"));

  const char* unit = metric == "speedup" ? "x" : " ms";
  std::cout << "history: " << runs.size() << " runs in " << store.path() << ", " << metric
            << (metric == "speedup" ? "" : " median") << "; E-divisive, alpha " << o.alpha << ", " << o.permutations
            << " permutations, seed " << o.seed << "\n";
  int changes = 0;
  for (const std::string& key : order) {
    const Series& s = by_key[key];
    const std::vector<ChangePoint> found = e_divisive(s.values, o);
    changes += static_cast<int>(found.size());
    std::cout << s.label << "  [" << key << "]  " << s.values.size() << " runs: ";
    if (s.values.size() < static_cast<size_t>(2 * o.min_segment)) {
      std::cout << "too few to judge\n";
      continue;
    }
    std::cout << (found.empty() ? "no change" : std::to_string(found.size()) + (found.size() == 1 ? " change" : " changes"))
              << "\n";
    for (const ChangePoint& cp : found) {
      const StoredRun& at = *s.runs[cp.index];
      std::cout << "  from run " << at.id << " (" << at.info.started_at << ", #" << cp.index + 1 << " in the series): "
                << num("%+.1f%%", 100 * cp.step) << "  (" << num("%.4f", cp.before) << " → " << num("%.4f", cp.after)
                << unit << ", p=" << num("%.3f", cp.p_value) << ")\n";
    }
  }
  std::cout << "history: " << changes << (changes == 1 ? " change" : " changes") << " in " << order.size()
            << (order.size() == 1 ? " case\n" : " cases\n");
  return kExitOk;
}

}  // namespace fb::cli
