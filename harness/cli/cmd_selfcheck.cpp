// fusebench selfcheck: an A/A experiment on this machine (harness/judge/selfcheck.h). Runs the
// scenarios --repeats times into --db, compares every consecutive pair as `compare` would,
// and reports the false-alarm rate and the smallest change each case's noise lets through;
// with --inject-delay, also runs with the engine slowed by that fraction of its own time (in
// turn with the A/A runs) and reports how many of those comparisons say `slower`. Exit 0
// when the false-alarm rate is at most --max-false-alarms (and detection at least
// --min-detection), 1 otherwise, 2 on error.
// With --from-db, runs nothing and judges the runs already in the database (to judge an
// experiment again under other --alpha or --min-effect).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <set>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/run_selection.h"
#include "harness/judge/selfcheck.h"
#include "harness/measure/environment.h"
#include "harness/run/run_loop.h"
#include "harness/stats/statistics.h"

namespace fb::cli {

namespace {

// One run of the scenarios into the database, as `fusebench run` makes it (each case's
// line printed as it is stored), with the engine slowed by the fraction `slowdown` of its
// own time where given (timing.inject_slowdown); returns the stored cases.
// With `against`, a paired A/B run against that binary (whose side never gets the slowdown).
SelfCheckRun run_once(const std::vector<std::string>& files, const std::string& db, const std::string& what,
                      bool slowed, const std::string& against, double slowdown = 0) {
  std::cout << what << " (load " << format_number("%.2f", load_average()[0]) << ")" << std::endl;
  RunRequest request;
  request.scenario_files = files;
  request.db_path = db;
  request.command = "fusebench selfcheck (" + what + ")";
  request.against = against;
  if (slowdown > 0) request.inject_slowdown = slowdown;
  RunSession session(request, std::cout);
  run_in_process(session);
  session.finish();
  SelfCheckRun run{slowed, session.store().load_cases(session.run_id()), {}};
  if (session.baseline_run_id()) run.paired_baseline = session.store().load_cases(session.baseline_run_id());
  return run;
}

constexpr const char* kSlowedLabel = "slowed run";

std::string pct(double v) { return std::isfinite(v) ? format_number("%.1f%%", 100 * v) : "-"; }

}  // namespace

int cmd_selfcheck(int argc, char** argv) {
  cxxopts::Options opts("fusebench selfcheck",
                        "A/A self-check: run the scenarios several times, compare every consecutive pair, and report\n"
                        "the false-alarm rate and the smallest change this machine's noise lets compare see.");
  opts.positional_help("SCENARIO...");
  opts.add_options()("db", "results database the runs go into", cxxopts::value<std::string>())(
      "repeats", "A/A runs (at least 2; with --from-db, the database says)", cxxopts::value<int>()->default_value("10"))(
      "inject-delay", "then also run with the engine slowed by this fraction of its own time (0.05 = 5%)",
      cxxopts::value<double>())("inject-repeats", "runs with the slowdown", cxxopts::value<int>()->default_value("3"))(
      "min-effect", "the change compare must detect (as compare --min-effect)",
      cxxopts::value<double>()->default_value("0.03"))(
      "alpha", "as compare --alpha", cxxopts::value<double>()->default_value("0.01"))(
      "max-false-alarms", "exit 1 when more than this fraction of A/A comparisons say slower or faster",
      cxxopts::value<double>()->default_value("0.02"))(
      "min-detection", "exit 1 when fewer than this fraction of slowed-down comparisons say slower",
      cxxopts::value<double>()->default_value("0.9"))(
      "from-db", "run nothing: judge the runs already in --db (those selfcheck labelled slowed as slowed runs, all others as A/A runs)")(
      "paired", "A/A through the paired A/B path: every run is `run --against` this fusebench itself (or --against BIN), "
      "judged pair by pair")("verbose", "also list every comparison's verdict and its reason")("against", "with --paired: the other binary (default: this one)", cxxopts::value<std::string>())(
      "scenarios", "scenario files", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"scenarios"});
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  const bool from_db = args.count("from-db") > 0;
  if (!args.count("scenarios") && !from_db) throw Error("no scenario files given");
  if (!args.count("db")) throw Error("--db FILE is required");
  const int repeats = args["repeats"].as<int>(), inject_repeats = args["inject-repeats"].as<int>();
  CompareOptions o;
  o.alpha = args["alpha"].as<double>();
  o.min_effect = args["min-effect"].as<double>();
  // --paired: every run against this very binary (an A/A through the A/B path) or --against's.
  std::string against;
  if (args.count("against") && !args.count("paired")) throw Error("--against is for --paired runs");
  if (args.count("paired"))
    against = args.count("against") ? args["against"].as<std::string>()
                                    : std::filesystem::read_symlink("/proc/self/exe").string();
  std::optional<double> inject;
  if (args.count("inject-delay")) inject = args["inject-delay"].as<double>();

  const std::string db = args["db"].as<std::string>();
  std::vector<SelfCheckRun> runs;
  if (from_db) {
    // Each run as selfcheck labelled it; runs `fusebench run` made are A/A runs.
    const ResultStore store = open_existing_store(db);
    // A paired run's other side is read with it, not as a run of its own.
    std::set<int64_t> other_sides;
    for (const StoredRun& r : store.list_runs())
      if (r.info.paired_with) other_sides.insert(r.info.paired_with);
    for (const StoredRun& r : store.list_runs()) {
      if (other_sides.count(r.id)) continue;
      runs.push_back({r.info.command.find(kSlowedLabel) != std::string::npos, store.load_cases(r.id, CaseDetail::kTiming),
                      r.info.paired_with ? store.load_cases(r.info.paired_with, CaseDetail::kTiming)
                                         : std::vector<StoredCase>{}});
    }
    const auto slowed = std::count_if(runs.begin(), runs.end(), [](const SelfCheckRun& r) { return r.slowed; });
    if (runs.size() - slowed < 2) throw Error(db + ": holds fewer than 2 A/A runs");
    if (slowed > 0 && !inject)
      throw Error(db + ": holds " + std::to_string(slowed) + " slowed runs; give --inject-delay F, the slowdown they ran with");
  } else {
    // The first A/A run, then slowed and A/A runs in turn: each slowed run is compared with
    // the A/A run just before it, as tonight is with last night, and each A/A pair spans a
    // slowed run, so both see the same drift of the machine.
    const std::vector<std::string> files = args["scenarios"].as<std::vector<std::string>>();
    auto aa_run = [&](int i) {
      runs.push_back(run_once(files, db, "A/A run " + std::to_string(i) + "/" + std::to_string(repeats), false, against));
    };
    const auto started = std::chrono::steady_clock::now();
    aa_run(1);
    // How long the whole check will take, once one run has said what a run costs here.
    const int total = repeats + (inject ? inject_repeats : 0);
    const double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    std::cerr << "selfcheck's run 1 of " << total << " took " << std::lround(first_s) << " s; the other " << total - 1
              << " should take about " << std::lround(first_s * (total - 1) / 60) << " min\n";
    // Each slowed run's engine waits that fraction of its own previous run's time before
    // each run: 5% of whatever the machine makes it take. (A fixed wait sized on an earlier
    // run was 2.5% once the machine had slowed a case twofold.)
    for (int a = 2, s = 1; a <= repeats || (inject && s <= inject_repeats);) {
      if (inject && s <= inject_repeats) {
        runs.push_back(run_once(files, db,
                                std::string(kSlowedLabel) + " " + std::to_string(s) + "/" + std::to_string(inject_repeats) +
                                    " (engine +" + pct(*inject) + ")",
                                true, against, *inject));
        ++s;
      }
      if (a <= repeats) aa_run(a++);
    }
  }

  const SelfCheckReport report = summarize_self_check(runs, o);
  if (args.count("verbose"))
    for (const SelfCheckVerdict& v : report.verdicts)
      std::cout << "run " << v.run << (v.slowed ? " slowed " : " A/A    ") << verdict_name(v.verdict) << "  " << v.label
                << ": " << v.reason << "\n";
  const auto aa_runs = std::count_if(runs.begin(), runs.end(), [](const SelfCheckRun& r) { return !r.slowed; });
  std::cout << "\nselfcheck: " << aa_runs << " A/A runs, consecutive pairs compared (alpha " << o.alpha << ", min effect "
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
