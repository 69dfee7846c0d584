// fusebench export: stored results as CSV or JSON, one row per case and executor, with the
// columns docs/commands.md documents — for users' own dashboards and notebooks.
#include <fstream>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/run_selection.h"
#include "reports/export.h"

namespace fb::cli {

int cmd_export(int argc, char** argv) {
  cxxopts::Options opts("fusebench export",
                        "Write stored results as CSV or JSON: one row per case and executor (columns: see docs/commands.md).");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "format", "csv or json", cxxopts::value<std::string>()->default_value("csv"))(
      "run", "only this run (default: every run, oldest first)", cxxopts::value<int64_t>())(
      "o,output", "file to write (default: standard output)", cxxopts::value<std::string>());
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  const ExportFormat format = parse_export_format(args["format"].as<std::string>());
  ResultStore store = open_existing_store(args.count("db") ? args["db"].as<std::string>() : "");
  std::vector<int64_t> runs;
  if (args.count("run")) {
    runs.push_back(pick_run(store, args["run"].as<int64_t>()));
  } else {
    for (const StoredRun& r : store.list_runs()) runs.push_back(r.id);
  }
  if (!args.count("output")) {
    export_runs(store, runs, format, std::cout);
    std::cout.flush();
    if (!std::cout) throw Error("cannot write to standard output");
    return kExitOk;
  }
  const std::string path = args["output"].as<std::string>();
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw Error("cannot write " + path);
  export_runs(store, runs, format, out);
  out.flush();
  if (!out) throw Error("cannot write " + path);
  return kExitOk;
}

}  // namespace fb::cli
