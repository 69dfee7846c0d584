// fusebench report: the self-contained HTML report of one run.
#include <filesystem>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "reports/html_report.h"

namespace fb::cli {

int cmd_report(int argc, char** argv) {
  cxxopts::Options opts("fusebench report", "Write the self-contained HTML report of a run.");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "o,output", "HTML file to write", cxxopts::value<std::string>()->default_value("report.html"))(
      "run", "run id (default: the latest run)", cxxopts::value<int64_t>());
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("db")) throw Error("--db FILE is required");
  const std::string db = args["db"].as<std::string>();
  if (!std::filesystem::exists(db)) throw Error(db + ": no such results database");
  ResultStore store(db);
  std::optional<int64_t> run;
  if (args.count("run")) run = args["run"].as<int64_t>();
  const std::string out = args["output"].as<std::string>();
  write_html_report(store, out, run);
  std::cout << "report: " << std::filesystem::absolute(out).string() << "\n";
  return kExitOk;
}

}  // namespace fb::cli
