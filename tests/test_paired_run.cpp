// Paired A/B runs through the binary (`run --against`, docs/measurement.md, "Paired A/B runs"): both sides
// stored as two linked runs under one case key, the test hook on the candidate only, compare
// and gate judging pair by pair, an A/A self-check through the same path, and a wrong
// --against refused before anything runs.
#include <gtest/gtest.h>

#include <fstream>

#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"

namespace {

class PairedRun : public ::testing::Test {
 protected:
  std::string path(const std::string& name) const { return dir_.path(name); }
  std::string fb(const std::string& args) const { return std::string(FUSEBENCH_BINARY) + " " + args; }
  // Batch 1 of a small MLP, 4 pairs (no more: max_pairs); nothing counts as disturbed,
  // since ctest runs other tests beside this one.
  std::string scenario(const std::string& more_timing = R"("max_pairs": 4)") const {
    std::ofstream(path("ab.json")) << R"({"name": "ab", "model": "zoo:mlp?in=64&hidden=256&out=8&layers=2",
      "threads": 1, "gate": {"max_regression": 0.05},
      "timing": {"warmup_ms": 5, "min_iterations": 20, "max_seconds": 0.4, "processes": 4, "process_samples": 20,
                 "disturbance_cpus": 64, )" + more_timing + "}}";
    return path("ab.json");
  }
  fb::ScratchDir dir_{"fusebench_paired"};
};

TEST_F(PairedRun, BothSidesAreStoredLinkedAndTheHookSlowsTheCandidateOnly) {
  const std::string db = path("ab.db");
  // The engine slowed by 2 ms a run: far beyond any noise, so the verdict is known.
  const fb::Outcome run = fb::sh(fb("run " + scenario() + " --against " + FUSEBENCH_BINARY + " --inject-delay-us 2000 --db " + db));
  ASSERT_EQ(run.code, 0) << run.output;
  EXPECT_NE(run.output.find("paired A/B run: this fusebench (run 2) against "), std::string::npos) << run.output;
  EXPECT_NE(run.output.find("\n    against: engine "), std::string::npos) << run.output;

  fb::ResultStore store(db);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].info.paired_with, runs[0].id);
  EXPECT_EQ(runs[0].info.paired_with, 0);
  EXPECT_NE(runs[0].info.timed_by.find(std::string(FUSEBENCH_BINARY) + " (fusebench "), std::string::npos)
      << runs[0].info.timed_by;
  EXPECT_EQ(runs[1].info.timed_by, "");
  EXPECT_FALSE(runs[0].finished_at.empty());
  const auto candidate = store.load_cases(runs[1].id), baseline = store.load_cases(runs[0].id);
  ASSERT_EQ(candidate.size(), 1u);
  ASSERT_EQ(baseline.size(), 1u);
  EXPECT_EQ(candidate[0].result.spec.case_key(), baseline[0].result.spec.case_key());
  EXPECT_EQ(candidate[0].result.spec.timing.inject_delay_us, 2000);
  EXPECT_EQ(baseline[0].result.spec.timing.inject_delay_us, 0);
  EXPECT_EQ(candidate[0].result.process_noise.processes, 4);
  EXPECT_EQ(baseline[0].result.process_noise.processes, 4);
  EXPECT_GT(candidate[0].result.engine.stats.median, baseline[0].result.engine.stats.median + 1.5);

  // compare and gate take the other side as the baseline and judge pair by pair.
  const fb::Outcome compare = fb::sh(fb("compare --db " + db));
  EXPECT_EQ(compare.code, 0) << compare.output;
  EXPECT_NE(compare.output.find("compare: run 2 against run 1"), std::string::npos) << compare.output;
  EXPECT_NE(compare.output.find("\npaired: run 1 is the other side of this A/B run"), std::string::npos) << compare.output;
  EXPECT_NE(compare.output.find("\nslower  "), std::string::npos) << compare.output;
  EXPECT_NE(compare.output.find("(paired processes (4))"), std::string::npos) << compare.output;
  const fb::Outcome gate = fb::sh(fb("gate --db " + db));
  EXPECT_EQ(gate.code, 1) << gate.output;
  EXPECT_NE(gate.output.find("gate: paired A/B run: max_regression judges each case against run 1"), std::string::npos)
      << gate.output;
  EXPECT_NE(gate.output.find("max_regression: slower: "), std::string::npos) << gate.output;
}

// The proportional hook: the engine waits that fraction of its own previous run's time, so
// it is that much slower whatever the machine does to it; the other side never waits.
TEST_F(PairedRun, TheSlowdownHookScalesTheCandidatesEngineByItsOwnTime) {
  const std::string db = path("slow.db");
  const fb::Outcome run = fb::sh(fb("run " + scenario() + " --against " + FUSEBENCH_BINARY + " --inject-slowdown 0.9 --db " + db));
  ASSERT_EQ(run.code, 0) << run.output;
  fb::ResultStore store(db);
  const auto runs = store.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  const auto candidate = store.load_cases(runs[1].id), baseline = store.load_cases(runs[0].id);
  ASSERT_EQ(candidate.size(), 1u);
  ASSERT_EQ(baseline.size(), 1u);
  EXPECT_EQ(candidate[0].result.spec.timing.inject_slowdown, 0.9);
  EXPECT_EQ(baseline[0].result.spec.timing.inject_slowdown, 0);
  // 1.9 times the engine's own time, the other side never slowed. Only a floor: the wait is
  // a fraction of the previous run, so a run a busy machine stretched stretches the next
  // wait too (a fresh Debian root under ctest -j2 measured 2.8).
  const double ratio = candidate[0].result.engine.stats.median / baseline[0].result.engine.stats.median;
  EXPECT_GT(ratio, 1.4) << ratio;
  // As a scenario field it is a fraction, and a percentage is refused saying so.
  std::ofstream(path("pct.json")) << R"({"name": "pct", "model": "zoo:mlp", "timing": {"inject_slowdown": 5}})";
  const fb::Outcome pct = fb::sh(fb("run " + path("pct.json") + " --db " + path("pct.db")));
  EXPECT_EQ(pct.code, 2) << pct.output;
  EXPECT_NE(pct.output.find("timing.inject_slowdown"), std::string::npos) << pct.output;
  EXPECT_NE(pct.output.find("not a percentage"), std::string::npos) << pct.output;
}

// Pairs beyond `processes` while their noise would hide paired_detectable, up to max_pairs.
TEST_F(PairedRun, MorePairsWhileTheirNoiseHidesTheChangeToDetect) {
  auto pairs_timed = [&](const std::string& timing, const std::string& db) {
    const fb::Outcome run = fb::sh(fb("run " + scenario(timing) + " --against " + FUSEBENCH_BINARY + " --db " + db));
    EXPECT_EQ(run.code, 0) << run.output;
    fb::ResultStore store(db);
    const auto runs = store.list_runs();
    if (runs.size() != 2u) return -1;
    const auto candidate = store.load_cases(runs[1].id), baseline = store.load_cases(runs[0].id);
    EXPECT_EQ(candidate[0].result.process_noise.processes, baseline[0].result.process_noise.processes);
    return candidate[0].result.process_noise.processes;
  };
  // No pair count sees a 0.001% change: all 7; any sees 90%: the asked 4.
  EXPECT_EQ(pairs_timed(R"("max_pairs": 7, "paired_detectable": 0.00001)", path("many.db")), 7);
  EXPECT_EQ(pairs_timed(R"("max_pairs": 7, "paired_detectable": 0.9)", path("few.db")), 4);
}

TEST_F(PairedRun, AnAgainstThatIsNoFusebenchIsRefusedBeforeAnythingRuns) {
  const std::string db = path("no.db");
  const fb::Outcome missing = fb::sh(fb("run " + scenario() + " --against " + path("nothing") + " --db " + db));
  EXPECT_EQ(missing.code, 2) << missing.output;
  EXPECT_NE(missing.output.find("--against " + path("nothing") + ": no executable file there"), std::string::npos)
      << missing.output;
  const fb::Outcome other = fb::sh(fb("run " + scenario() + " --against /bin/true --db " + db));
  EXPECT_EQ(other.code, 2) << other.output;
  EXPECT_NE(other.output.find("--against /bin/true: not a fusebench executable"), std::string::npos) << other.output;
  EXPECT_TRUE(fb::ResultStore(db).list_runs().empty());
}

// The self-check through the paired path: every run is this binary against itself, an A/A
// comparison of its two sides; the slowed run's candidate side carries the slowdown.
TEST_F(PairedRun, SelfcheckJudgesEachPairedRunsTwoSides) {
  const fb::Outcome o = fb::sh(fb("selfcheck " + scenario() + " --db " + path("self.db") +
                                  " --paired --repeats 2 --inject-delay 0.9 --inject-repeats 1 --max-false-alarms 1"));
  EXPECT_NE(o.output.find("false alarms: "), std::string::npos) << o.output;
  EXPECT_NE(o.output.find(" of 2 A/A comparisons"), std::string::npos) << o.output;  // one per paired run, 2 runs
  EXPECT_NE(o.output.find("detection: 1 of 1 comparisons with the engine 90.0% slower said slower"), std::string::npos)
      << o.output;
  EXPECT_EQ(fb::ResultStore(path("self.db")).list_runs().size(), 6u);  // 3 paired runs, two sides each
  // Judged again from the database: the same counts.
  const fb::Outcome again =
      fb::sh(fb("selfcheck --from-db --db " + path("self.db") + " --inject-delay 0.9 --max-false-alarms 1 --verbose"));
  EXPECT_NE(again.output.find("detection: 1 of 1 comparisons"), std::string::npos) << again.output;
  // --verbose: each comparison's verdict and why, the slowed one judged on its pairs (on the
  // speedup, or on the engine time where the machine moved the reference between the sides).
  EXPECT_NE(again.output.find("run 2 slowed slower  ab b=1 fp32 standard t=1: paired, judged on the "),
            std::string::npos)
      << again.output;
  EXPECT_NE(again.output.find(" of 2 A/A comparisons"), std::string::npos) << again.output;
}

}  // namespace
