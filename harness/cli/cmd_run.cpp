// fusebench run: expand scenarios into cases, run each, store each as it finishes, and
// write the HTML report. The run itself (shards, resume, storing) is harness/run/run_loop.h.
#include <filesystem>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/run/mpi_run.h"
#include "harness/run/run_loop.h"
#include "reports/html_report.h"

namespace fb::cli {

namespace {

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
      "resume", "continue the latest interrupted run of the same scenarios (and shard), skipping the cases it stored")(
      "plugin", "plugin library (.so) to load for every case (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "shard", "run only shard K of N (K/N, 1-based) of the cases, into its own database; join shards with `fusebench merge`",
      cxxopts::value<std::string>())(
      "cores-per-worker", "under mpirun: several workers per host, each pinned to its own K cores (default: one case per host at a time)",
      cxxopts::value<int>())(
      "case-timeout", "under mpirun: seconds after which a case without a result is stored as lost (default 600 + 4 x timing.max_seconds)",
      cxxopts::value<double>())(
      "against", "paired A/B: time every case in worker processes of this fusebench and of this other one (a build of "
      "the base commit), alternating ABBA; stores a run for each side, which compare and gate then judge pair by pair",
      cxxopts::value<std::string>())(
      "inject-delay-us", "TEST HOOK: this fusebench's engine busy-waits this long before each run (never the --against side)",
      cxxopts::value<double>())("inject-slowdown",
                                "TEST HOOK: this fusebench's engine busy-waits this fraction of its own previous run's time "
                                "before each run (0.05: 5% slower; never the --against side)",
                                cxxopts::value<double>())("scenarios", "scenario files", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"scenarios"});
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("scenarios")) {
    std::cerr << "fusebench run: no scenario files given\n\n" << opts.help();
    return kExitError;
  }

  RunRequest request;
  request.scenario_files = args["scenarios"].as<std::vector<std::string>>();
  request.db_path = args["db"].as<std::string>();
  request.resume = args.count("resume") > 0;
  if (args.count("shard")) request.shard = parse_shard(args["shard"].as<std::string>());
  request.command = command_line(argc, argv);
  if (args.count("against")) request.against = args["against"].as<std::string>();
  if (args.count("inject-delay-us")) request.inject_delay_us = args["inject-delay-us"].as<double>();
  if (args.count("inject-slowdown")) request.inject_slowdown = args["inject-slowdown"].as<double>();
  if (args.count("plugin"))
    for (const std::string& lib : args["plugin"].as<std::vector<std::string>>())
      request.plugin_libraries.push_back(std::filesystem::absolute(lib).lexically_normal().string());
  const std::string report_path = args.count("report")
                                      ? args["report"].as<std::string>()
                                      : std::filesystem::path(request.db_path).replace_extension(".html").string();

  auto finish = [&](RunSession& session) {
    session.finish();
    write_html_report(session.store(), report_path, session.run_id());
    return session.summarize(report_path);
  };
  DistributedOptions distributed;
  if (args.count("cores-per-worker")) distributed.cores_per_worker = args["cores-per-worker"].as<int>();
  if (args.count("case-timeout")) distributed.case_timeout_s = args["case-timeout"].as<double>();
  if (launched_world_size().value_or(1) > 1) {
    if (!request.against.empty()) throw Error("--against: a paired A/B run runs in one process, not under mpirun");
    return run_distributed(request, distributed, finish);
  }
  if (args.count("cores-per-worker") || args.count("case-timeout"))
    throw Error("--cores-per-worker and --case-timeout apply under mpirun only (this run has one process)");
  RunSession session(request, std::cout);
  run_in_process(session);
  return finish(session);
}

}  // namespace fb::cli
