// fusebench run: expand scenarios into cases, run each, store each as it finishes, and
// write the HTML report. Scenario files are all validated before anything runs.
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <set>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/environment.h"
#include "harness/result_store.h"
#include "harness/runner.h"
#include "harness/scenario.h"
#include "reports/html_report.h"

namespace fb::cli {

namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string case_line(const CaseResult& r) {
  if (r.status == "error") return r.spec.label() + "  ERROR: " + r.error;
  return r.spec.label() + "  engine " + fmt("%.3f", r.engine.stats.median) + " ms  reference " +
         fmt("%.3f", r.reference.stats.median) + " ms  speedup " + fmt("%.2f", r.speedup) + "x [" +
         fmt("%.2f", r.speedup_ci_low) + ", " + fmt("%.2f", r.speedup_ci_high) + "]  max err " +
         fmt("%.2e", r.accuracy.max_abs_err) + "  " + r.status + (r.noisy ? "  (noisy: " + r.stop_reason + ")" : "");
}

// What identifies a case of a scenario for --resume: its place in the matrix. (The case key
// needs the model's hash, which is only known once the model is loaded.)
std::string matrix_identity(const CaseSpec& s) {
  return s.scenario + "|" + s.model + "|" + s.precision + "|" + std::to_string(s.batch) + "|" + s.fusion + "|" +
         std::to_string(s.threads) + "|" + std::to_string(s.seed);
}

std::set<std::string> scenario_names(const nlohmann::json& scenarios) {
  std::set<std::string> names;
  if (scenarios.is_array())
    for (const auto& s : scenarios)
      if (s.is_object() && s.contains("name") && s["name"].is_string()) names.insert(s["name"].get<std::string>());
  return names;
}

std::string command_line(int argc, char** argv) {
  std::string s = "fusebench";
  for (int i = 0; i < argc; ++i) s += std::string(" ") + argv[i];
  return s;
}

}  // namespace

int cmd_run(int argc, char** argv) {
  cxxopts::Options opts("fusebench run", "Run scenarios: build, check and time every case; store every sample.");
  opts.positional_help("SCENARIO...");
  opts.add_options()("db", "results database (created if missing; runs are appended)",
                     cxxopts::value<std::string>()->default_value("fusebench.db"))(
      "report", "HTML report to write (default: the database path with .html)", cxxopts::value<std::string>())(
      "resume", "continue the latest interrupted run of the same scenarios, skipping the cases it stored")(
      "scenarios", "scenario files", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"scenarios"});
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("scenarios")) {
    std::cerr << "fusebench run: no scenario files given\n\n" << opts.help();
    return kExitError;
  }

  // Validate every scenario before running anything.
  std::vector<Scenario> scenarios;
  std::set<std::string> names;
  for (const std::string& path : args["scenarios"].as<std::vector<std::string>>()) {
    scenarios.push_back(load_scenario(path));
    if (!names.insert(scenarios.back().name).second)
      throw Error(path + ": scenario name '" + scenarios.back().name + "' is used by another scenario in this run");
  }
  std::vector<CaseSpec> cases;
  for (const Scenario& s : scenarios)
    for (CaseSpec c : expand_cases(s)) cases.push_back(std::move(c));

  const std::string db_path = args["db"].as<std::string>();
  const std::string report_path = args.count("report") ? args["report"].as<std::string>()
                                                       : std::filesystem::path(db_path).replace_extension(".html").string();
  ResultStore store(db_path);
  RunInfo info = capture_environment();
  info.command = command_line(argc, argv);
  for (const Scenario& s : scenarios) info.scenarios.push_back({{"name", s.name}, {"file", s.file}});

  // --resume: the latest run that never finished and ran exactly these scenarios.
  std::optional<int64_t> resumed;
  size_t skipped = 0;
  if (args.count("resume")) {
    const std::vector<StoredRun> runs = store.list_runs();
    for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
      if (it->finished_at.empty() && scenario_names(it->info.scenarios) == names) {
        resumed = it->id;
        break;
      }
    }
    if (resumed) {
      std::set<std::string> done;
      for (const StoredCase& sc : store.load_cases(*resumed, CaseDetail::kSummary)) done.insert(matrix_identity(sc.result.spec));
      std::vector<CaseSpec> todo;
      for (CaseSpec& c : cases)
        if (!done.count(matrix_identity(c))) todo.push_back(std::move(c));
      skipped = cases.size() - todo.size();
      cases = std::move(todo);
    } else {
      std::cout << "resume: no interrupted run of these scenarios in " << db_path << "; starting a new run\n";
    }
  }
  const int64_t run_id = resumed ? *resumed : store.begin_run(info);
  if (resumed)
    std::cout << "run " << run_id << " resumed: " << skipped << " cases already stored, " << cases.size()
              << " to run, " << info.cpu_model << ", " << info.cores << " cores\n";
  else
    std::cout << "run " << run_id << ": " << cases.size() << " cases from " << scenarios.size() << " scenario(s), "
              << info.cpu_model << ", " << info.cores << " cores\n";

  const bool tty = isatty(STDERR_FILENO);
  CaseRunner runner;
  int failed = 0, errors = 0;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string prefix = "[" + std::to_string(i + 1) + "/" + std::to_string(cases.size()) + "] ";
    ProgressFn progress;
    if (tty) progress = [&](const std::string& msg) { std::cerr << "\r\033[K" << prefix << cases[i].label() << "  " << msg << std::flush; };
    if (tty) progress("building");
    CaseResult r = runner.run(cases[i], progress);
    if (tty) std::cerr << "\r\033[K" << std::flush;
    store.write_case(run_id, r);  // its own transaction: an interrupted run keeps what is done
    std::cout << prefix << case_line(r) << std::endl;
    failed += r.status == "failed";
    errors += r.status == "error";
  }
  store.finish_run(run_id);
  write_html_report(store, report_path, run_id);
  std::cout << "\n" << cases.size() - failed - errors << " passed, " << failed << " failed, " << errors << " errors"
            << (skipped ? " (and " + std::to_string(skipped) + " stored before the interruption)" : "") << "\n"
            << "results: " << std::filesystem::absolute(db_path).string() << " (run " << run_id << ")\n"
            << "report:  " << std::filesystem::absolute(report_path).string() << "\n";
  if (errors) return kExitError;
  return failed ? kExitVerdictFailed : kExitOk;
}

}  // namespace fb::cli
