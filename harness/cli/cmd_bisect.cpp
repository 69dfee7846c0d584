// fusebench bisect: the first commit that made a case slower. Between a good and a bad commit
// of a fusebench checkout (or a row of binaries, oldest first), each commit is built in one
// git worktree (scripts/build_commit.sh: ccache makes a commit's build its change's files),
// its case timed paired against the good end (worker processes of the two binaries taking
// turns, as `run --against`), and judged as compare judges a paired run; harness/judge/bisect.h
// picks the next commit and says when to stop. The first bad commit and the last good one
// are then timed with a per-layer profile and explained (harness/judge/explain.h). Every timing is
// stored in --db. Exit 0 with a first bad commit, 3 when the change is within the noise (or
// there is none), 2 on bad input or a commit that does not build.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <sstream>

#include "harness/cases/scenario.h"
#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/judge/bisect.h"
#include "harness/judge/explain.h"
#include "harness/measure/environment.h"
#include "harness/run/run_loop.h"
#include "harness/run/runner.h"

namespace fb::cli {

namespace {

namespace fs = std::filesystem;

std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The command's standard output, without its last newline; `what` names it in the error
// when it fails.
std::string output_of(const std::string& command, const std::string& what) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (!p) throw Error(what + ": cannot run `" + command + "`");
  char buf[4096];
  while (size_t n = std::fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  if (status != 0) throw Error(what + " failed (`" + command + "`): " + out.substr(out.size() > 2000 ? out.size() - 2000 : 0));
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The one case of the scenario whose key starts with `prefix` (its model hashed as a run
// hashes it); fb::Error listing the scenario's keys when none or several match.
CaseSpec case_of(const std::string& scenario_file, const std::string& prefix) {
  CaseRunner loader;
  std::vector<CaseSpec> found;
  std::string keys;
  for (CaseSpec spec : expand_cases(load_scenario(scenario_file))) {
    spec.model_hash = loader.model(spec.model).hash;
    const std::string key = spec.case_key();
    keys += "\n  " + key + "  " + spec.label();
    if (key.rfind(prefix, 0) == 0) found.push_back(spec);
  }
  if (found.size() != 1)
    throw Error(scenario_file + ": " + (found.empty() ? "no case" : "several cases") + " with key '" + prefix +
                "' (--case); its cases:" + keys);
  return found.front();
}

struct Commit {
  std::string sha, subject;
  std::string binary;  // built (or given) fusebench; "" until built
  std::string name() const {  // the sha and the subject's start, which is enough to know a commit by
    if (subject.empty()) return sha.substr(0, 12);
    return sha.substr(0, 12) + " \"" + (subject.size() > 48 ? subject.substr(0, 45) + "..." : subject) + "\"";
  }
};

// The commits from good to bad, oldest first: good, then each commit on the first-parent
// path after it up to bad.
std::vector<Commit> commits_between(const std::string& repo, const std::string& good, const std::string& bad) {
  const std::string git = "git -C " + quoted(repo) + " ";
  const auto sha = [&](const std::string& ref, const char* option) {
    try {
      return output_of(git + "rev-parse --verify --quiet " + quoted(ref + "^{commit}"), option);
    } catch (const Error&) {
      throw Error(std::string(option) + " " + ref + ": names no commit in " + repo);
    }
  };
  const std::string good_sha = sha(good, "--good"), bad_sha = sha(bad, "--bad");
  if (std::system((git + "merge-base --is-ancestor " + good_sha + " " + bad_sha).c_str()) != 0 || good_sha == bad_sha)
    throw Error("--good " + good + " is not an earlier commit of --bad " + bad + " in " + repo);
  std::vector<Commit> out{{good_sha, output_of(git + "log -1 --format=%s " + good_sha, "git log"), ""}};
  std::istringstream lines(output_of(
      git + "log --reverse --first-parent --ancestry-path --format='%H %s' " + good_sha + ".." + bad_sha, "git log"));
  for (std::string line; std::getline(lines, line);)
    out.push_back({line.substr(0, 40), line.size() > 41 ? line.substr(41) : "", ""});
  return out;
}

// Builds a commit through the checkout's scripts/build_commit.sh in `work`/src (one worktree,
// checked out again for each commit) and keeps its binary as `work`/bin/SHA/fusebench.
void build(Commit& c, const std::string& repo, const fs::path& work) {
  const fs::path kept = work / "bin" / c.sha.substr(0, 12) / "fusebench";
  if (!fs::exists(kept)) {
    std::cout << "bisect: building " << c.name() << std::endl;
    output_of(quoted((fs::path(repo) / "scripts" / "build_commit.sh").string()) + " " + c.sha + " " +
                  quoted((work / "src").string()),
              "building " + c.name());
    fs::create_directories(kept.parent_path());
    fs::copy_file(work / "src" / "build" / "fusebench", kept, fs::copy_options::overwrite_existing);
  }
  c.binary = kept.string();
}

RunInfo run_info(const std::string& binary, const std::string& command) {
  RunInfo info = capture_environment();
  info.command = command;
  info.timed_by = binary + " (" + fusebench_version_of(binary, "bisect") + ")";
  return info;
}

}  // namespace

int cmd_bisect(int argc, char** argv) {
  cxxopts::Options opts("fusebench bisect",
                        "The first commit that made a case slower: builds commits between --good and --bad of a\n"
                        "fusebench checkout in a git worktree (ccache), times the case paired against the good end,\n"
                        "narrows to the first bad commit and explains it against the last good one. With --binaries,\n"
                        "the same over built binaries, oldest (good) first.");
  opts.positional_help("SCENARIO");
  opts.add_options()("case", "the case (a key or its prefix) of SCENARIO", cxxopts::value<std::string>())(
      "good", "a commit whose case is fast", cxxopts::value<std::string>())(
      "bad", "a later commit whose case is slow", cxxopts::value<std::string>())(
      "repo", "the fusebench checkout (default: this directory)", cxxopts::value<std::string>()->default_value("."))(
      "work", "where the worktree and each commit's binary are kept (default: REPO/build/bisect)",
      cxxopts::value<std::string>())("binaries", "instead of commits: fusebench binaries, oldest first (comma-separated)",
                                     cxxopts::value<std::vector<std::string>>())(
      "db", "results database for every timing (default: WORK/bisect.db)", cxxopts::value<std::string>())(
      "profile-iterations", "profiled runs of the explained builds (default: the scenario's, else 30)",
      cxxopts::value<int>())("scenario", "scenario file", cxxopts::value<std::string>());
  add_judgement_options(opts);
  opts.parse_positional({"scenario"});
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("scenario")) throw Error("no scenario file given");
  if (!args.count("case")) throw Error("--case KEY is required (compare and explain print the keys)");
  const bool by_binaries = args.count("binaries") > 0;
  if (by_binaries == (args.count("good") || args.count("bad")))
    throw Error("give either --good and --bad (commits) or --binaries, not both");
  if (!by_binaries && !(args.count("good") && args.count("bad"))) throw Error("--good and --bad go together");
  CompareOptions judged = judgement_options_from(args);
  judged.paired = true;
  const std::string repo = fs::absolute(args["repo"].as<std::string>()).lexically_normal().string();
  const fs::path work = args.count("work") ? fs::absolute(args["work"].as<std::string>()) : fs::path(repo) / "build" / "bisect";
  std::string command = "fusebench bisect";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];

  std::vector<Commit> commits;
  if (by_binaries) {
    for (const std::string& b : args["binaries"].as<std::vector<std::string>>()) {
      const std::string path = fs::absolute(b).lexically_normal().string();
      fusebench_version_of(path, "--binaries");  // an Error naming it when it is no fusebench
      commits.push_back({path, "", path});
    }
    if (commits.size() < 2) throw Error("--binaries needs two or more, oldest first");
  } else {
    commits = commits_between(repo, args["good"].as<std::string>(), args["bad"].as<std::string>());
  }
  const auto name = [&](size_t i) { return by_binaries ? commits[i].sha : commits[i].name(); };
  CaseSpec spec = case_of(args["scenario"].as<std::string>(), args["case"].as<std::string>());
  const std::string db = args.count("db") ? args["db"].as<std::string>() : (work / "bisect.db").string();
  if (!by_binaries) fs::create_directories(work);
  ResultStore store(db);
  std::cout << "bisect: " << spec.label() << "  [" << spec.case_key() << "], " << commits.size() - 1
            << (by_binaries ? " binaries" : " commits") << " after the good end " << name(0) << "; timings in " << db << "\n";

  const auto binary = [&](size_t i) -> const std::string& {
    if (commits[i].binary.empty()) build(commits[i], repo, work);
    return commits[i].binary;
  };
  const auto store_runs = [&](size_t baseline, size_t candidate, const CaseResult& b, const CaseResult& c, bool paired) {
    const int64_t base_run = store.begin_run(run_info(binary(baseline), command));
    RunInfo info = run_info(binary(candidate), command);
    if (paired) info.paired_with = base_run;
    const int64_t run = store.begin_run(info);
    store.write_case(base_run, b);
    store.write_case(run, c);
    store.finish_run(base_run);
    store.finish_run(run);
    return std::pair{base_run, run};
  };
  const auto time_against_good = [&](size_t i) {
    const std::string& good = binary(0);
    CaseRunner runner(binary(i));
    const auto [candidate, baseline] = runner.run_paired(spec, good);
    if (candidate.status == CaseStatus::kError || baseline.status == CaseStatus::kError)
      throw Error(name(i) + ": the case failed: " + (candidate.status == CaseStatus::kError ? candidate.error : baseline.error));
    const auto [base_run, run] = store_runs(0, i, baseline, candidate, true);
    CaseJudgement j = judge_case(baseline, candidate, nullptr, true, judged);
    std::cout << "bisect: " << name(i) << ": engine " << change_text(j.engine) << " against the good end, "
              << verdict_name(j.verdict) << " (runs " << run << " against " << base_run << ")" << std::endl;
    return j;
  };
  const BisectOutcome outcome = bisect_commits(commits.size(), time_against_good, name);
  std::cout << "bisect: " << outcome.message << "\n";
  if (outcome.end != BisectEnd::kFound) return kExitInconclusive;

  // The explanation: the last good and the first bad build, each timed with its profile.
  CaseSpec profiled = spec;
  if (args.count("profile-iterations")) profiled.profile_iterations = args["profile-iterations"].as<int>();
  else if (profiled.profile_iterations == 0) profiled.profile_iterations = 30;
  if (profiled.profile_iterations < 1) throw Error("--profile-iterations must be at least 1");
  std::cout << "bisect: profiling " << name(outcome.last_good) << " and " << name(outcome.first_bad) << std::endl;
  const CaseResult good = CaseRunner(binary(outcome.last_good)).run(profiled);
  const CaseResult bad = CaseRunner(binary(outcome.first_bad)).run(profiled);
  const auto [base_run, run] = store_runs(outcome.last_good, outcome.first_bad, good, bad, false);
  const std::vector<StoredCase> base_cases = store.load_cases(base_run), cases = store.load_cases(run);
  const RunInfo base_info = store.load_run(base_run).info, info = store.load_run(run).info;
  CompareOptions unpaired = judged;
  unpaired.paired = false;
  const Explanation e = explain_cases({&base_cases.at(0), &base_info}, {&cases.at(0), &info},
                                      judge_case(good, bad, nullptr, true, unpaired));
  std::cout << "\n" << explanation_text(e) << "\n(again: fusebench explain --db " << db << " --run " << run
            << " --baseline " << base_run << " --case " << spec.case_key().substr(0, 8) << ")\n";
  return kExitOk;
}

}  // namespace fb::cli
