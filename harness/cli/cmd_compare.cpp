// fusebench compare: a run against a baseline, case by case, judged against how far the
// case moves between processes and between runs on that machine (harness/judge/compare.h): per
// case the speedup's, engine's and reference's change with the noise beside each, and a
// verdict (faster, slower, unchanged, noisy, environment). Exit 0; with
// --fail-on-regression, 1 when a case is slower, else 3 when one is noisy or environment.
#include <cmath>
#include <cstdio>

#include "harness/cases/gpu_environment.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/run_selection.h"
#include "harness/judge/compare.h"
#include "harness/judge/gate.h"

namespace fb::cli {

namespace {

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// What the machine (and for a GPU case, the GPU) was doing while the candidate was timed.
std::string machine_noise(const CaseResult& r) {
  const Interference& in = r.interference;
  std::string s = "load " + format_number("%.1f", in.load_before) + "→" + format_number("%.1f", in.load_after);
  if (in.timed_wall_ms > 0 && std::isfinite(in.other_cpu_ms))
    s += ", other processes " + format_number("%.2f", in.other_cpu_ms / in.timed_wall_ms) + " CPUs";
  if (std::isfinite(r.process_noise.speedup))
    s += ", spread between " + std::to_string(r.process_noise.processes) + " processes: speedup " +
         format_number("%.1f%%", 100 * r.process_noise.speedup) + ", engine " + format_number("%.1f%%", 100 * r.process_noise.engine);
  if (r.gpu) s += "; " + gpu_summary(*r.gpu);
  return s;
}

}  // namespace

int cmd_compare(int argc, char** argv) {
  cxxopts::Options opts("fusebench compare",
                        "Compare a run against a baseline: per case, the speedup's and the engine's change judged\n"
                        "against that case's noise between processes and runs on this machine, and a verdict\n"
                        "(faster, slower, unchanged, noisy, environment). Cases are matched by case key.");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "run", "the run to judge (default: the latest)", cxxopts::value<int64_t>())(
      "baseline", "baseline run id (default: the run before --run, or the latest of --baseline-db)",
      cxxopts::value<int64_t>())("baseline-db", "take the baseline from this database instead",
                                 cxxopts::value<std::string>())(
      "no-history", "judge against the noise between processes only, not between earlier runs")(
      "fail-on-regression", "exit 1 when a case is slower, 3 when none is but one is noisy or environment");
  add_judgement_options(opts);
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  CompareOptions o = judgement_options_from(args);

  ResultStore store = open_existing_store(args.count("db") ? args["db"].as<std::string>() : "");
  const int64_t run = pick_run(store, args.count("run") ? std::optional(args["run"].as<int64_t>()) : std::nullopt);
  std::optional<ResultStore> other;
  if (args.count("baseline-db")) other.emplace(open_existing_store(args["baseline-db"].as<std::string>(), "--baseline-db"));
  const ResultStore& base_store = other ? *other : store;
  std::optional<int64_t> base_run;
  if (args.count("baseline")) base_run = pick_run(base_store, args["baseline"].as<int64_t>());
  else if (other) base_run = pick_run(*other, std::nullopt);
  else base_run = default_baseline(store, run);
  if (!other && *base_run == run)
    throw Error(store.path() + ": run " + std::to_string(run) + " compared with itself says nothing; give another "
                "--baseline (an A/A comparison is two runs of the same code: `fusebench selfcheck`)");

  const JudgementContext context = judgement_context(store, run, base_store, *base_run, !args.count("no-history"));
  o.paired = context.paired;
  const std::string& machine = context.machine;
  const std::string& base_machine = context.baseline_machine;
  const bool same_machine = context.same_machine;
  const std::vector<CaseComparison> rows =
      compare_runs(base_store.load_cases(*base_run), store.load_cases(run), o, &context.history, same_machine);
  const std::string base_name = (other ? other->path() + " " : std::string()) + "run " + std::to_string(*base_run);
  std::cout << "compare: run " << run << " against " << base_name << " (alpha " << o.alpha << ", min effect "
            << format_number("%.1f%%", 100 * o.min_effect) << "; ± is the smallest change this case's noise lets through)\n";
  if (o.paired)
    std::cout << "paired: run " << *base_run << " is the other side of this A/B run (" << store.load_run(*base_run).info.timed_by
              << "), its processes alternated with these: each change is the median of the adjacent processes' ratios\n";
  if (same_machine)
    std::cout << "machine: " << machine << "\n";
  else
    std::cout << "machines differ: " << base_machine << " → " << machine
              << (o.cross_host ? " (--cross-host: times judged too)\n" : " (judged on speedup only; --cross-host to judge times)\n");
  std::cout << "figures: the median over a run's processes of each one's 5th-percentile time and of its own speedup\n"
            << "verdict      speedup                      engine ms                       reference  case\n";
  int counts[5] = {0, 0, 0, 0, 0}, unmatched = 0;
  for (const CaseComparison& c : rows) {
    const std::string name = c.label + "  [" + c.case_key + "]";
    if (!c.judgement) {
      ++unmatched;
      std::cout << pad("-", 13) << pad("", 72) << name << "  (" << c.note << ")\n";
      continue;
    }
    const CaseJudgement& j = *c.judgement;
    ++counts[static_cast<int>(j.verdict)];
    if (j.load) {  // a load case: its percentiles and validity
      const LoadJudgement& l = *j.load;
      const std::string pct = "p" + format_number("%g", 100 * l.percentile);
      std::cout << pad(verdict_name(j.verdict), 13) << "load " << pct << " " << format_number("%.3f", l.tail.baseline) << "→"
                << format_number("%.3f ms", l.tail.candidate) << ", p50 " << format_number("%.3f", l.median.baseline) << "→"
                << format_number("%.3f ms", l.median.candidate) << ", valid " << (l.baseline_valid ? "yes" : "no") << "→"
                << (l.candidate_valid ? "yes" : "no") << "  " << name << "\n             " << j.reason << "\n";
      continue;
    }
    std::cout << pad(verdict_name(j.verdict), 13)
              << pad(format_number("%.2f", j.speedup.baseline) + "→" + format_number("%.2fx ", j.speedup.candidate) + change_text(j.speedup), 28) << " "
              << pad(format_number("%.3f", j.engine.baseline) + "→" + format_number("%.3f ", j.engine.candidate) + change_text(j.engine), 30) << " "
              << pad(format_number("%+.1f%%", 100 * j.reference.change), 10) << " " << name << "\n"
              << "             " << j.reason << "; noise from " << j.speedup.noise_source << "; " << machine_noise(*c.candidate)
              << "\n";
  }
  const int slower = counts[static_cast<int>(Verdict::kSlower)], faster = counts[static_cast<int>(Verdict::kFaster)];
  const int unchanged = counts[static_cast<int>(Verdict::kUnchanged)], noisy = counts[static_cast<int>(Verdict::kNoisy)];
  const int environment = counts[static_cast<int>(Verdict::kEnvironment)];
  std::cout << "compare: " << slower << " slower, " << faster << " faster, " << unchanged << " unchanged, " << noisy
            << " noisy, " << environment << " environment";
  if (unmatched) std::cout << ", " << unmatched << " not compared";
  std::cout << "\n";
  if (!args.count("fail-on-regression")) return kExitOk;
  if (slower) return kExitVerdictFailed;
  return noisy || environment ? kExitInconclusive : kExitOk;
}

}  // namespace fb::cli
