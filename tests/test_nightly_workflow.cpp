// The nightly and self-check workflow through the binary, as a team's cron or CI meets it:
// scripts/nightly.sh two nights into one database (the first remembered as the last good
// night, the second compared with it, gated with JUnit, history and report written), and
// `fusebench selfcheck` running an A/A experiment with an injected slowdown, then judging
// the stored runs again with --from-db.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"

namespace {

std::string read(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// A case small enough to time in two processes in well under a second.
void write_tiny_scenario(const std::string& path) {
  std::ofstream(path) << R"({"name": "tiny", "model": "zoo:mlp?in=16&hidden=16&layers=1",
    "matrix": {"batch": [1], "fusion": ["standard"]}, "threads": 1,
    "timing": {"warmup_ms": 1, "min_iterations": 10, "max_seconds": 0.2, "processes": 2, "process_samples": 5,
               "disturbance_cpus": 64},
    "gate": {"min_speedup": 0.01, "max_regression": 0.5}})";
}

class NightlyWorkflow : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_.emplace("fusebench_nightly");
    write_tiny_scenario(path("tiny.json"));
  }
  std::string path(const std::string& name) const { return dir_->path(name); }
  std::optional<fb::ScratchDir> dir_;
};

TEST_F(NightlyWorkflow, TwoNightsIntoOneDatabase) {
  const std::string db = path("nightly.db");
  auto night = [&](const std::string& out) {
    return fb::sh("FUSEBENCH=" + std::string(FUSEBENCH_BINARY) + " SCENARIOS=" + path("tiny.json") + " OUT_DIR=" +
                  path(out) + " " FUSEBENCH_SOURCE_DIR "/scripts/nightly.sh " + db);
  };
  const fb::Outcome first = night("n1");
  ASSERT_EQ(first.code, 0) << first.output;
  EXPECT_NE(read(path("n1/compare.txt")).find("no good night yet"), std::string::npos);
  EXPECT_EQ(read(db + ".last-good"), "1\n");  // the first night passed its gate
  for (const char* f : {"run.txt", "gate.txt", "history.txt", "report.html", "junit.xml"})
    EXPECT_FALSE(read(path(std::string("n1/") + f)).empty()) << f;
  EXPECT_NE(read(path("n1/junit.xml")).find("<testsuite"), std::string::npos);

  const fb::Outcome second = night("n2");
  // Pass, or inconclusive where this machine's noise hides a 50% change: never a regression
  // or an error for the same code.
  ASSERT_TRUE(second.code == 0 || second.code == 3) << second.output;
  EXPECT_NE(read(path("n2/compare.txt")).find("compare: run 2 against run 1"), std::string::npos)
      << read(path("n2/compare.txt"));
  EXPECT_EQ(read(db + ".last-good"), second.code == 0 ? "2\n" : "1\n");  // only a passing night replaces it
  EXPECT_EQ(fb::ResultStore(db).list_runs().size(), 2u);
}

TEST_F(NightlyWorkflow, SelfCheckRunsThenJudgesTheStoredRunsAgain) {
  const std::string db = path("check.db");
  const std::string base = std::string(FUSEBENCH_BINARY) + " selfcheck --db " + db;
  // Thresholds that always pass: this checks the workflow, not the machine.
  const fb::Outcome ran = fb::sh(base + " " + path("tiny.json") +
                                 " --repeats 3 --inject-delay 0.5 --inject-repeats 1 --max-false-alarms 1 --min-detection 0");
  ASSERT_EQ(ran.code, 0) << ran.output;
  EXPECT_NE(ran.output.find("selfcheck: 3 A/A runs"), std::string::npos) << ran.output;
  // After its first run it says how long the rest will take.
  EXPECT_NE(ran.output.find("selfcheck's run 1 of 4 took "), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("; the other 3 should take about "), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("of 2 A/A comparisons"), std::string::npos) << ran.output;
  EXPECT_NE(ran.output.find("of 1 comparisons with the engine 50.0% slower"), std::string::npos) << ran.output;
  // The slowed run came second, between the first two A/A runs.
  const std::vector<fb::StoredRun> runs = fb::ResultStore(db).list_runs();
  ASSERT_EQ(runs.size(), 4u);
  EXPECT_NE(runs[1].info.command.find("(slowed run 1/1"), std::string::npos) << runs[1].info.command;
  EXPECT_NE(runs[3].info.command.find("(A/A run 3/3)"), std::string::npos) << runs[3].info.command;

  // Judged again from the database: the same verdicts, nothing run.
  const fb::Outcome again =
      fb::sh(base + " --from-db --inject-delay 0.5 --max-false-alarms 1 --min-detection 0");
  ASSERT_EQ(again.code, 0) << again.output;
  EXPECT_EQ(again.output.substr(again.output.find("selfcheck:")), ran.output.substr(ran.output.find("selfcheck:")));
  EXPECT_EQ(fb::ResultStore(db).list_runs().size(), 4u);

  // Slowed runs of an unknown slowdown, or too few A/A runs: an error naming the database.
  const fb::Outcome unknown = fb::sh(base + " --from-db");
  EXPECT_EQ(unknown.code, 2) << unknown.output;
  EXPECT_NE(unknown.output.find(db + ": holds 1 slowed runs; give --inject-delay F"), std::string::npos)
      << unknown.output;
  const std::string one = path("one.db");
  ASSERT_EQ(fb::sh(std::string(FUSEBENCH_BINARY) + " run " + path("tiny.json") + " --db " + one).code, 0);
  const fb::Outcome few = fb::sh(std::string(FUSEBENCH_BINARY) + " selfcheck --from-db --db " + one);
  EXPECT_EQ(few.code, 2) << few.output;
  EXPECT_NE(few.output.find(one + ": holds fewer than 2 A/A runs"), std::string::npos) << few.output;
}

}  // namespace
