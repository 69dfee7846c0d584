// fusebench gate: the CI verdict on a stored run. Every case must have run without
// error, agree with the reference within its tolerance, and (with --min-speedup) be at
// least that much faster than the reference. Exit 0 pass, 1 fail, 2 error.
#include <cstdio>
#include <filesystem>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/result_store.h"

namespace fb::cli {

int cmd_gate(int argc, char** argv) {
  cxxopts::Options opts("fusebench gate", "The CI verdict on a stored run: exit 0 pass, 1 fail, 2 error.");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "run", "run id (default: the latest run)", cxxopts::value<int64_t>())(
      "min-speedup", "every case's engine must be at least this many times faster than the reference",
      cxxopts::value<double>());
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("db")) throw Error("--db FILE is required");
  const std::string db = args["db"].as<std::string>();
  if (!std::filesystem::exists(db)) throw Error(db + ": no such results database");
  ResultStore store(db);
  std::optional<int64_t> run = args.count("run") ? std::optional<int64_t>(args["run"].as<int64_t>()) : store.latest_run();
  if (!run) throw Error(db + ": holds no runs");
  const std::optional<double> min_speedup =
      args.count("min-speedup") ? std::optional<double>(args["min-speedup"].as<double>()) : std::nullopt;
  if (min_speedup && !(*min_speedup > 0)) throw Error("--min-speedup must be positive");

  const std::vector<StoredCase> cases = store.load_cases(*run);
  if (cases.empty()) throw Error(db + ": run " + std::to_string(*run) + " has no cases");
  int failing = 0;
  for (const StoredCase& sc : cases) {
    const CaseResult& r = sc.result;
    std::string why;
    char buf[160];
    if (r.status == "error") {
      why = "error: " + r.error;
    } else if (r.status != "passed") {
      why = "accuracy: " + r.accuracy.detail;
    } else if (min_speedup && r.speedup < *min_speedup) {
      std::snprintf(buf, sizeof buf, "speedup %.2fx < %.2fx (engine %.3f ms, reference %.3f ms)", r.speedup, *min_speedup,
                    r.engine.stats.median, r.reference.stats.median);
      why = buf;
    }
    if (why.empty()) continue;
    ++failing;
    std::cout << "FAIL  " << r.spec.label() << "  [" << r.spec.case_key() << "]  " << why << "\n";
  }
  std::cout << "gate: run " << *run << ", " << cases.size() - failing << " of " << cases.size() << " cases pass";
  if (min_speedup) std::cout << " (min speedup " << *min_speedup << "x)";
  std::cout << (failing ? " — FAILED\n" : " — passed\n");
  return failing ? kExitVerdictFailed : kExitOk;
}

}  // namespace fb::cli
