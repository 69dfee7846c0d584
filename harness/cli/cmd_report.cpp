// fusebench report: the self-contained HTML report of a run — verdicts against a baseline,
// the gate, each case's history with change points, and why (distributions, engine view).
#include <filesystem>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/run_selection.h"
#include "reports/html_report.h"
#include "reports/report_model.h"

namespace fb::cli {

int cmd_report(int argc, char** argv) {
  cxxopts::Options opts("fusebench report",
                        "Write the self-contained HTML report of a run: gate, regressions and improvements against a\n"
                        "baseline with their noise, each case's history with change points, and the engine view.");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "o,output", "HTML file to write", cxxopts::value<std::string>()->default_value("report.html"))(
      "run", "run id (default: the latest run)", cxxopts::value<int64_t>())(
      "baseline", "baseline run id (default: the run before --run, or the latest of --baseline-db)",
      cxxopts::value<int64_t>())("baseline-db", "take the baseline from this database instead",
                                 cxxopts::value<std::string>())(
      "last", "runs of history per case, ending at --run", cxxopts::value<int>()->default_value("60"));
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  ReportOptions o;
  o.last = args["last"].as<int>();
  if (args.count("run")) o.run = args["run"].as<int64_t>();
  if (args.count("baseline")) o.baseline = args["baseline"].as<int64_t>();
  ResultStore store = open_existing_store(args.count("db") ? args["db"].as<std::string>() : "");
  std::optional<ResultStore> other;
  if (args.count("baseline-db")) other.emplace(open_existing_store(args["baseline-db"].as<std::string>(), "--baseline-db"));
  const ReportModel model = build_report_model(store, o, other ? &*other : nullptr);
  const std::string out = args["output"].as<std::string>();
  write_html_report(model, out);
  std::cout << "report: " << std::filesystem::absolute(out).string() << " (run " << model.run.id << ", "
            << model.cases.size() << " cases, " << (model.baseline ? "baseline " + model.baseline_name : "no baseline")
            << ", " << model.history_runs.size() << " runs of history)\n";
  return kExitOk;
}

}  // namespace fb::cli
