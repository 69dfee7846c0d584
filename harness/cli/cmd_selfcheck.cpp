// fusebench selfcheck: an A/A experiment on this machine (harness/selfcheck.h). Runs the
// scenarios --repeats times into --db, compares every consecutive pair as `compare` would,
// and reports the false-alarm rate and the smallest change each case's noise lets through;
// with --inject-delay, also runs with the engine slowed by that fraction of its median and
// reports how many of those comparisons say `slower`. Exit 0 when the false-alarm rate is
// at most --max-false-alarms (and detection at least --min-detection), 1 otherwise, 2 on error.
#include <chrono>
#include <cmath>
#include <cstdio>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/environment.h"
#include "harness/result_store.h"
#include "harness/runner.h"
#include "harness/scenario.h"
#include "harness/selfcheck.h"
#include "harness/statistics.h"

namespace fb::cli {

namespace {

// One run of `cases` into the store, as `fusebench run` stores it; returns its cases.
std::vector<StoredCase> run_once(ResultStore& store, CaseRunner& runner, const std::vector<CaseSpec>& cases,
                                 const std::vector<Scenario>& scenarios, const std::string& what) {
  RunInfo info = capture_environment();
  info.command = "fusebench selfcheck (" + what + ")";
  for (const Scenario& s : scenarios) info.scenarios.push_back({{"name", s.name}, {"file", s.file}});
  const int64_t run_id = store.begin_run(info);
  const auto t0 = std::chrono::steady_clock::now();
  int errors = 0;
  for (const CaseSpec& c : cases) {
    const CaseResult r = runner.run(c);
    store.write_case(run_id, r);
    if (r.status == "error") ++errors, std::cout << "  " << r.spec.label() << "  ERROR: " << r.error << "\n";
  }
  store.finish_run(run_id);
  std::cout << what << ": run " << run_id << ", " << cases.size() << " cases, "
            << num("%.0f s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count())
            << ", load " << num("%.2f", load_average()[0]) << (errors ? ", " + std::to_string(errors) + " errors" : "")
            << std::endl;
  return store.load_cases(run_id);
}

std::string pct(double v) { return std::isfinite(v) ? num("%.1f%%", 100 * v) : "-"; }

}  // namespace

int cmd_selfcheck(int argc, char** argv) {
  cxxopts::Options opts("fusebench selfcheck",
                        "A/A self-check: run the scenarios several times, compare every consecutive pair, and report\n"
                        "the false-alarm rate and the smallest change this machine's noise lets compare see.");
  opts.positional_help("SCENARIO...");
  opts.add_options()("db", "results database the runs go into", cxxopts::value<std::string>())(
      "repeats", "A/A runs (at least 2)", cxxopts::value<int>()->default_value("10"))(
      "inject-delay", "then also run with the engine slowed by this fraction of its median (0.05 = 5%)",
      cxxopts::value<double>())("inject-repeats", "runs with the slowdown", cxxopts::value<int>()->default_value("3"))(
      "min-effect", "the change compare must detect (as compare --min-effect)",
      cxxopts::value<double>()->default_value("0.03"))(
      "alpha", "as compare --alpha", cxxopts::value<double>()->default_value("0.01"))(
      "max-false-alarms", "exit 1 when more than this fraction of A/A comparisons say slower or faster",
      cxxopts::value<double>()->default_value("0.02"))(
      "min-detection", "exit 1 when fewer than this fraction of slowed-down comparisons say slower",
      cxxopts::value<double>()->default_value("0.9"))("scenarios", "scenario files",
                                                     cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"scenarios"});
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("scenarios")) throw Error("no scenario files given");
  if (!args.count("db")) throw Error("--db FILE is required");
  const int repeats = args["repeats"].as<int>(), inject_repeats = args["inject-repeats"].as<int>();
  if (repeats < 2) throw Error("--repeats must be at least 2");
  if (inject_repeats < 1) throw Error("--inject-repeats must be at least 1");
  CompareOptions o;
  o.alpha = args["alpha"].as<double>();
  o.min_effect = args["min-effect"].as<double>();
  if (!(o.alpha > 0 && o.alpha < 1)) throw Error("--alpha must lie between 0 and 1");
  if (!(o.min_effect >= 0)) throw Error("--min-effect must be >= 0");
  std::optional<double> inject;
  if (args.count("inject-delay")) {
    inject = args["inject-delay"].as<double>();
    if (!(*inject > 0 && *inject < 10)) throw Error("--inject-delay must be a fraction above 0 (0.05 = 5%)");
  }

  std::vector<Scenario> scenarios;
  std::vector<CaseSpec> cases;
  for (const std::string& path : args["scenarios"].as<std::vector<std::string>>()) {
    scenarios.push_back(load_scenario(path));
    for (CaseSpec c : expand_cases(scenarios.back())) cases.push_back(std::move(c));
  }
  ResultStore store(args["db"].as<std::string>());
  CaseRunner runner;
  std::vector<std::vector<StoredCase>> aa, slowed;
  for (int i = 0; i < repeats; ++i)
    aa.push_back(run_once(store, runner, cases, scenarios, "A/A run " + std::to_string(i + 1) + "/" + std::to_string(repeats)));

  if (inject) {
    // Each case slowed by the fraction of its own engine median (the median over the A/A runs).
    std::vector<CaseSpec> slow = cases;
    for (size_t c = 0; c < slow.size(); ++c) {
      std::vector<double> medians;
      for (const auto& run : aa)
        if (c < run.size() && run[c].result.status != "error") medians.push_back(run[c].result.engine.stats.median);
      slow[c].timing.inject_delay_us = *inject * percentile(medians, 0.5) * 1000;
    }
    for (int i = 0; i < inject_repeats; ++i)
      slowed.push_back(run_once(store, runner, slow, scenarios,
                                "slowed run " + std::to_string(i + 1) + "/" + std::to_string(inject_repeats) + " (engine +" +
                                    pct(*inject) + ")"));
  }

  const SelfCheckReport report = summarize_self_check(aa, slowed, o);
  std::cout << "\nselfcheck: " << repeats << " A/A runs, consecutive pairs compared (alpha " << o.alpha << ", min effect "
            << pct(o.min_effect) << ")\n";
  // Spreads are relative standard deviations: of the speedup between a run's processes
  // (median over the runs), and of the run-level speedup and engine median between runs.
  char head[512];
  std::snprintf(head, sizeof head, "%-42s %5s %6s %4s %6s %5s %12s %12s %12s %11s", "case", "pairs", "false", "env",
                "noisy", "unch", "proc:speedup", "runs:speedup", "runs:engine", "detectable");
  std::cout << head << (inject ? "  slowed: slower, engine slower" : "") << "\n";
  for (const SelfCheckCase& c : report.cases) {
    char line[512];
    std::snprintf(line, sizeof line, "%-42s %5d %6d %4d %6d %5d %12s %12s %12s %11s", c.label.c_str(), c.comparisons,
                  c.false_alarms, c.environment, c.noisy, c.unchanged, pct(c.process_spread).c_str(),
                  pct(c.run_spread_speedup).c_str(), pct(c.run_spread_engine).c_str(), pct(c.detectable).c_str());
    std::cout << line;
    if (inject) std::cout << "  " << c.detected << "/" << c.injected << ", " << c.engine_detected << "/" << c.injected;
    std::cout << "\n";
  }
  std::cout << "false alarms: " << report.false_alarms << " of " << report.comparisons << " A/A comparisons ("
            << pct(report.false_alarm_rate()) << ")\n";
  if (inject)
    std::cout << "detection: " << report.detected << " of " << report.injected << " comparisons with the engine "
              << pct(*inject) << " slower said slower (" << pct(report.detection_rate()) << "); engine time alone: "
              << report.engine_detected << " of " << report.injected << "\n";
  const bool ok = report.false_alarm_rate() <= args["max-false-alarms"].as<double>() &&
                  (!inject || report.detection_rate() >= args["min-detection"].as<double>());
  return ok ? kExitOk : kExitVerdictFailed;
}

}  // namespace fb::cli
