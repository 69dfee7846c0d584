// fusebench bisect: the search's decisions on made-up judgements (which commit is timed next,
// the first bad one, the stops when the change is within the noise), and the command through
// the binary over a row of "builds" whose later ones are slower (fake binaries that give
// their workers a busy wait), with its errors on bad input.
#include "harness/judge/bisect.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cmath>
#include <fstream>

#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"

namespace {

fb::CaseJudgement judged(fb::Verdict v, double engine_change) {
  fb::CaseJudgement j;
  j.verdict = v;
  j.engine.change = engine_change;
  j.engine.detectable = 0.02;
  j.engine.verdict = v;
  j.reason = "made up";
  return j;
}

std::string name(size_t i) { return "c" + std::to_string(i); }

// A regression of `step` from commit `first_bad` on: slower there and after, unchanged before.
std::function<fb::CaseJudgement(size_t)> step_at(size_t first_bad, double step = 0.2) {
  return [=](size_t i) {
    return i >= first_bad ? judged(fb::Verdict::kSlower, step) : judged(fb::Verdict::kUnchanged, 0.001);
  };
}

std::vector<size_t> timed(const fb::BisectOutcome& o) {
  std::vector<size_t> out;
  for (const fb::BisectStep& s : o.steps) out.push_back(s.commit);
  return out;
}

TEST(Bisect, TimesTheBadEndThenHalvesTheRange) {
  const fb::BisectOutcome o = fb::bisect_commits(10, step_at(6), name);
  EXPECT_EQ(o.end, fb::BisectEnd::kFound);
  EXPECT_EQ(o.first_bad, 6u);
  EXPECT_EQ(o.last_good, 5u);
  EXPECT_EQ(timed(o), (std::vector<size_t>{9, 4, 6, 5}));
  EXPECT_EQ(o.message, "first bad commit: c6 (the last good one: c5)");
}

TEST(Bisect, FindsEveryPositionInAboutLogTwoTimings) {
  for (size_t n = 2; n <= 40; ++n)
    for (size_t bad = 1; bad < n; ++bad) {
      const fb::BisectOutcome o = fb::bisect_commits(n, step_at(bad), name);
      ASSERT_EQ(o.end, fb::BisectEnd::kFound) << n << " " << bad;
      EXPECT_EQ(o.first_bad, bad) << n;
      EXPECT_EQ(o.last_good, bad - 1) << n;
      // The bad end, then one timing per halving of the n - 1 commits after the good end.
      EXPECT_LE(o.steps.size(), 1 + static_cast<size_t>(std::ceil(std::log2(double(n - 1))))) << n << " " << bad;
    }
}

TEST(Bisect, StopsAtTheBadEndWhenItIsNotSlower) {
  for (fb::Verdict v : {fb::Verdict::kUnchanged, fb::Verdict::kFaster}) {
    const fb::BisectOutcome o = fb::bisect_commits(8, [&](size_t) { return judged(v, -0.01); }, name);
    EXPECT_EQ(o.end, fb::BisectEnd::kNoRegression);
    EXPECT_EQ(timed(o), (std::vector<size_t>{7}));
    EXPECT_NE(o.message.find("the bad end c7 is not slower than the good end c0: engine -1.0%"), std::string::npos)
        << o.message;
    EXPECT_NE(o.message.find("nothing to bisect"), std::string::npos) << o.message;
  }
}

TEST(Bisect, StopsAtTheBadEndWhenItsChangeIsWithinTheNoise) {
  for (fb::Verdict v : {fb::Verdict::kNoisy, fb::Verdict::kEnvironment}) {
    const fb::BisectOutcome o = fb::bisect_commits(8, [&](size_t) { return judged(v, 0.04); }, name);
    EXPECT_EQ(o.end, fb::BisectEnd::kWithinNoise);
    EXPECT_EQ(timed(o), (std::vector<size_t>{7}));
    EXPECT_NE(o.message.find("the bad end c7 against the good end c0 is within the case's noise: engine +4.0%"),
              std::string::npos)
        << o.message;
  }
}

TEST(Bisect, TimesANoisyCommitAgainAndStopsWithTheRangeWhenItStaysNoisy) {
  // Commit 4 is noisy once, then slower: the search goes on.
  int noisy_left = 1;
  const fb::BisectOutcome once = fb::bisect_commits(9, [&](size_t i) {
    if (i == 4 && noisy_left-- > 0) return judged(fb::Verdict::kNoisy, 0.1);
    return step_at(3)(i);
  }, name);
  EXPECT_EQ(once.end, fb::BisectEnd::kFound);
  EXPECT_EQ(once.first_bad, 3u);
  EXPECT_EQ(timed(once), (std::vector<size_t>{8, 4, 4, 2, 3}));
  // Commit 4 always noisy: the first bad commit lies in (0, 8] and the search says so.
  const fb::BisectOutcome stays = fb::bisect_commits(9, [&](size_t i) {
    return i == 4 ? judged(fb::Verdict::kNoisy, 0.1) : step_at(3)(i);
  }, name);
  EXPECT_EQ(stays.end, fb::BisectEnd::kInconclusive);
  EXPECT_EQ(timed(stays), (std::vector<size_t>{8, 4, 4}));
  EXPECT_EQ(stays.last_good, 0u);
  EXPECT_EQ(stays.first_bad, 8u);
  EXPECT_NE(stays.message.find("c4 was within the case's noise twice"), std::string::npos) << stays.message;
  EXPECT_NE(stays.message.find("one of 8 after c0, up to c8"), std::string::npos) << stays.message;
}

TEST(Bisect, SaysWhenTheFirstBadCommitHoldsOnlyPartOfTheChange) {
  // +5% from commit 3, +20% in all from commit 6.
  const fb::BisectOutcome o = fb::bisect_commits(9, [](size_t i) {
    return i >= 6 ? judged(fb::Verdict::kSlower, 0.2) : i >= 3 ? judged(fb::Verdict::kSlower, 0.05)
                                                                : judged(fb::Verdict::kUnchanged, 0);
  }, name);
  EXPECT_EQ(o.first_bad, 3u);
  EXPECT_NE(o.message.find("it is slower by +5.0%"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("of the bad end's +20.0%"), std::string::npos) << o.message;
  EXPECT_NE(o.message.find("later commits add to it"), std::string::npos) << o.message;
}

class BisectCommand : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.path(name); }
  std::string fb(const std::string& args) const { return std::string(FUSEBENCH_BINARY) + " bisect " + args; }
  std::string scenario() const {
    std::ofstream(path("one.json")) << R"({"name": "bisect", "model": "zoo:mlp?in=64&hidden=256&out=8&layers=2",
      "threads": 1, "matrix": {"batch": [1, 2]},
      "timing": {"warmup_ms": 5, "min_iterations": 20, "max_seconds": 0.4, "processes": 4, "process_samples": 20,
                 "disturbance_cpus": 64}})";
    return path("one.json");
  }
  // A "build" of fusebench whose engine busy-waits `delay_us` a run: its worker's spec gets
  // the test hook before the real binary reads it.
  std::string build(const std::string& name, int delay_us) const {
    const std::string file = path(name);
    std::ofstream(file) << "#!/bin/sh\nif [ \"$1\" = worker ]; then sed -i 's/\"inject_delay_us\":[0-9.e+-]*/\"inject_delay_us\":"
                        << delay_us << "/' \"$3\"; fi\nexec " << FUSEBENCH_BINARY << " \"$@\"\n";
    chmod(file.c_str(), 0755);
    return file;
  }
  // The key of the scenario's batch-1 case, as bisect lists the keys when --case names none.
  std::string batch1_key() {
    const fb::Outcome o = fb::sh(fb(scenario() + " --case nosuchkey --binaries " + FUSEBENCH_BINARY + "," + FUSEBENCH_BINARY));
    EXPECT_EQ(o.code, 2) << o.output;
    EXPECT_NE(o.output.find("no case with key 'nosuchkey' (--case); its cases:"), std::string::npos) << o.output;
    const size_t at = o.output.find("  bisect b=1");
    if (at == std::string::npos || at < 16) return "";
    return o.output.substr(at - 16, 16);
  }
  fb::ScratchDir dir_{"fusebench_bisect"};
};

TEST_F(BisectCommand, FindsTheFirstSlowBuildAmongBinariesAndExplainsIt) {
  const std::string key = batch1_key();
  ASSERT_EQ(key.size(), 16u);
  // Six builds after the good one; the fourth adds 2 ms a run, hundreds of times the
  // engine's own time. Four pairs of a microsecond-scale engine beside other tests can
  // leave the unchanged builds' noise above 3%: the change to detect is set at 50%.
  std::string binaries = build("b0", 0);
  for (int i = 1; i <= 6; ++i) binaries += "," + build("b" + std::to_string(i), i >= 4 ? 2000 : 0);
  const std::string db = path("bisect.db");
  const fb::Outcome o = fb::sh(fb(scenario() + " --case " + key.substr(0, 8) + " --binaries " + binaries + " --db " + db +
                                  " --profile-iterations 5 --min-effect 0.5"));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("bisect: first bad commit: " + path("b4") + " (the last good one: " + path("b3") + ")"),
            std::string::npos)
      << o.output;
  EXPECT_NE(o.output.find("explain: "), std::string::npos) << o.output;
  // The bad end (slower), then b3 (unchanged) and b4 (slower): three paired timings, each
  // storing its two sides, and the two profiled runs of the explanation.
  fb::ResultStore store(db);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 8u);
  for (size_t i = 0; i < 6; i += 2) EXPECT_EQ(runs[i + 1].info.paired_with, runs[i].id);
  const auto timed_by = [&](size_t run, const std::string& build) {
    EXPECT_NE(runs[run].info.timed_by.find(path(build) + " (fusebench "), std::string::npos) << runs[run].info.timed_by;
  };
  timed_by(0, "b0");
  timed_by(1, "b6");
  timed_by(3, "b3");
  timed_by(5, "b4");
  timed_by(6, "b3");
  timed_by(7, "b4");
  EXPECT_TRUE(store.load_cases(runs[7].id).at(0).result.profile.has_value());
}

TEST_F(BisectCommand, RefusesBadInputWithOneClearError) {
  const std::string s = scenario(), b = FUSEBENCH_BINARY;
  const auto refused = [&](const std::string& args, const std::string& says) {
    const fb::Outcome o = fb::sh(fb(args));
    EXPECT_EQ(o.code, 2) << args << "\n" << o.output;
    EXPECT_NE(o.output.find(says), std::string::npos) << args << "\n" << o.output;
  };
  refused(s + " --binaries " + b + "," + b, "--case KEY is required");
  refused(s + " --case ab --good HEAD~1 --bad HEAD --binaries " + b + "," + b, "either --good and --bad (commits) or --binaries");
  refused(s + " --case ab --good HEAD~1", "--good and --bad go together");
  refused(s + " --case ab --binaries " + b, "--binaries needs two or more");
  std::ofstream(path("not_fusebench")) << "#!/bin/sh\necho hello\n";
  chmod(path("not_fusebench").c_str(), 0755);
  refused(s + " --case ab --binaries " + b + "," + path("not_fusebench"),
          "--binaries " + path("not_fusebench") + ": not a fusebench executable");
  // A checkout of two commits: refs that name none, and a good end that does not come first.
  const std::string repo = path("repo"), git = "git -C " + repo + " -c user.name=t -c user.email=t@t ";
  ASSERT_EQ(fb::sh("git init -q " + repo + " && " + git + "commit -q --allow-empty -m one && " + git +
                   "commit -q --allow-empty -m two").code, 0);
  refused(s + " --case ab --good nosuchref --bad HEAD --repo " + repo, "--good nosuchref: names no commit in " + repo);
  refused(s + " --case ab --good HEAD --bad HEAD~1 --repo " + repo, "--good HEAD is not an earlier commit of --bad HEAD~1");
}

}  // namespace
