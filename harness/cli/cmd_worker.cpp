// fusebench worker (hidden, not in the usage text): the worker process the runner starts for
// each of a case's timing.processes (harness/run/worker_process.h). Reads a CaseSpec as JSON,
// runs the case here and writes the CaseResult as JSON.
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/run/worker_process.h"

namespace fb::cli {

int cmd_worker(int argc, char** argv) {
  cxxopts::Options opts("fusebench worker", "Internal: time one case in this process for the runner.");
  opts.add_options()("spec", "the CaseSpec as JSON", cxxopts::value<std::string>())(
      "out", "where to write the CaseResult as JSON", cxxopts::value<std::string>())(
      "process", "this worker's index among the case's processes", cxxopts::value<int>()->default_value("0"));
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("spec") || !args.count("out")) throw Error("--spec FILE and --out FILE are required");
  return worker_main(args["spec"].as<std::string>(), args["out"].as<std::string>(), args["process"].as<int>());
}

}  // namespace fb::cli
