// fusebench explain: why a case got slower or faster, in layer, module and fusion-decision
// names (harness/judge/explain.h). By default every case `compare` calls slower or faster in a
// run against its baseline, judged exactly as compare judges it; --case picks one case
// whatever its verdict; --against-case explains one case against another (two batches,
// fusion levels or precisions of one run). Text for people, --json for tools. Exit 0; 2 on
// bad input, a case or run that is not there, or a case without a stored profile.
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/cli/run_selection.h"
#include "harness/judge/compare.h"
#include "harness/judge/explain.h"

namespace fb::cli {

namespace {

// The case of `cases` whose key starts with `prefix` (the last stored, as compare takes
// it); fb::Error when none or several keys match.
const StoredCase& case_by_key(const std::vector<StoredCase>& cases, const std::string& prefix, int64_t run,
                              const std::string& path) {
  const StoredCase* found = nullptr;
  std::string keys;
  for (const StoredCase& c : cases) {
    const std::string key = c.result.spec.case_key();
    if (key.rfind(prefix, 0) != 0) continue;
    if (found && found->result.spec.case_key() != key) keys += ", " + key;
    else if (!found) keys = key;
    found = &c;
  }
  if (!found) throw Error(path + ": run " + std::to_string(run) + " has no case with key '" + prefix + "'");
  if (keys.find(", ") != std::string::npos)
    throw Error(path + ": run " + std::to_string(run) + ": the key '" + prefix + "' names several cases (" + keys +
                "); give more of it");
  return *found;
}

}  // namespace

int cmd_explain(int argc, char** argv) {
  cxxopts::Options opts("fusebench explain",
                        "Why a case got slower or faster: the layers and modules whose time changed most (with\n"
                        "intervals), fusion groups that split or merged and the pass that decided, kernel, precision\n"
                        "and shape changes, arena, build time, settings and environment, and the layers' sum\n"
                        "reconciled with the measured change. Reads the per-layer profiles a scenario's\n"
                        "\"profile\": {\"iterations\": N} stores with each case.");
  opts.add_options()("db", "results database", cxxopts::value<std::string>())(
      "run", "the run to explain (default: the latest)", cxxopts::value<int64_t>())(
      "baseline", "baseline run (default: as compare picks it; with --against-case: --run itself)",
      cxxopts::value<int64_t>())("case", "explain this case (a key or its prefix), whatever compare's verdict",
                                 cxxopts::value<std::string>())(
      "against-case", "with --case: against this case of the baseline run (default: of --run)",
      cxxopts::value<std::string>())("json", "JSON for tools instead of text")(
      "top", "regions and modules to list in text", cxxopts::value<int>()->default_value("8"));
  add_judgement_options(opts);  // which cases compare calls slower or faster
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  CompareOptions o = judgement_options_from(args);
  const bool against = args.count("against-case") > 0;
  if (against && !args.count("case")) throw Error("--against-case needs --case: the case to explain against it");

  ResultStore store = open_existing_store(args.count("db") ? args["db"].as<std::string>() : "");
  const int64_t run = pick_run(store, args.count("run") ? std::optional(args["run"].as<int64_t>()) : std::nullopt);
  const int64_t base_run = args.count("baseline") ? pick_run(store, args["baseline"].as<int64_t>())
                           : against             ? run
                                                 : default_baseline(store, run);
  const std::vector<StoredCase> cases = store.load_cases(run);
  const std::vector<StoredCase> base_cases = base_run == run ? cases : store.load_cases(base_run);
  const StoredRun run_info = store.load_run(run), base_info = store.load_run(base_run);
  const auto side = [](const StoredCase& c, const StoredRun& r) { return ExplainSide{&c, &r.info}; };

  std::vector<Explanation> explained;
  std::string summary;
  if (against) {
    const StoredCase& a = case_by_key(cases, args["case"].as<std::string>(), run, store.path());
    const StoredCase& b = case_by_key(base_cases, args["against-case"].as<std::string>(), base_run, store.path());
    if (a.id == b.id) throw Error(store.path() + ": --case and --against-case name the same case; name two");
    explained.push_back(explain_cases(side(b, base_info), side(a, run_info)));
  } else {
    if (base_run == run)
      throw Error(store.path() + ": run " + std::to_string(run) + " against itself explains nothing; give another --baseline "
                  "(or --against-case for two cases of one run)");
    const JudgementContext context = judgement_context(store, run, store, base_run);
    o.paired = context.paired;
    const std::vector<CaseComparison> rows = compare_runs(base_cases, cases, o, &context.history, context.same_machine);
    const std::string wanted = args.count("case") ? case_by_key(cases, args["case"].as<std::string>(), run, store.path())
                                                        .result.spec.case_key()
                                                  : "";
    int considered = 0;
    for (const CaseComparison& c : rows) {
      if (!wanted.empty() && c.case_key != wanted) continue;
      if (!wanted.empty() && !c.judgement)
        throw Error(store.path() + ": case '" + c.label + "' [" + c.case_key + "] cannot be explained against run " +
                    std::to_string(base_run) + ": " + c.note);
      if (!c.judgement) continue;
      ++considered;
      const Verdict v = c.judgement->verdict;
      if (wanted.empty() && v != Verdict::kSlower && v != Verdict::kFaster) continue;
      explained.push_back(explain_cases(side(case_by_key(base_cases, c.case_key, base_run, store.path()), base_info),
                                        side(case_by_key(cases, c.case_key, run, store.path()), run_info), c.judgement));
    }
    if (explained.empty())
      summary = "explain: compare calls none of the " + std::to_string(considered) + " cases of run " +
                std::to_string(run) + " slower or faster than run " + std::to_string(base_run) +
                "; nothing to explain (--case KEY explains one anyway)\n";
  }

  if (args.count("json")) {
    nlohmann::json out = {{"db", store.path()}, {"run", run}, {"baseline", base_run}, {"explanations", nlohmann::json::array()}};
    for (const Explanation& e : explained) out["explanations"].push_back(explanation_to_json(e));
    std::cout << out.dump(2) << "\n";
    return kExitOk;
  }
  std::cout << summary;
  for (size_t i = 0; i < explained.size(); ++i)
    std::cout << (i ? "\n" : "") << explanation_text(explained[i], size_t(args["top"].as<int>()));
  return kExitOk;
}

}  // namespace fb::cli
