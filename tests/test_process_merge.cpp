// Timing in several worker processes: the hierarchical bootstrap (processes, then samples
// within them), the merge of the workers' results into one case, the per-process share of
// the timing settings, and a crashing worker through the binary.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "harness/measure/process_merge.h"
#include "harness/run/worker_process.h"
#include "harness/stats/bootstrap.h"
#include "harness/stats/statistics.h"
#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"

namespace fb {
namespace {

// n samples spread evenly over [center * (1 - rel), center * (1 + rel)].
std::vector<double> around(double center, double rel, int n) {
  std::vector<double> v;
  for (int i = 0; i < n; ++i) v.push_back(center * (1 - rel + 2 * rel * i / (n - 1)));
  return v;
}

TEST(HierarchicalBootstrap, OneProcessIsTheOrdinaryBootstrap) {
  const std::vector<double> x = around(2.0, 0.1, 41);
  const Interval plain = bootstrap_median_ci(x);
  const Interval hier = hierarchical_median_ci({x});
  EXPECT_EQ(hier.low, plain.low);
  EXPECT_EQ(hier.high, plain.high);
}

TEST(HierarchicalBootstrap, ProcessesThatDisagreeWidenTheInterval) {
  // Three processes, tight inside, 10% apart: pooled samples look precise; a re-run is not.
  const ProcessGroups groups{around(1.0, 0.01, 50), around(1.1, 0.01, 50), around(1.2, 0.01, 50)};
  std::vector<double> pooled;
  for (const auto& g : groups) pooled.insert(pooled.end(), g.begin(), g.end());
  const Interval naive = bootstrap_median_ci(pooled);
  const Interval hier = hierarchical_median_ci(groups);
  EXPECT_GT(hier.high - hier.low, 5 * (naive.high - naive.low));
  EXPECT_LT(hier.low, 1.05);
  EXPECT_GT(hier.high, 1.15);
}

TEST(HierarchicalBootstrap, RatioCancelsWhatAProcessDoesToBothSides) {
  // Each process scales both executors alike (its memory layout, its neighbours): the ratio
  // is 2 in every process, so its interval is narrow although each side's is wide.
  ProcessGroups engine, reference;
  for (double scale : {1.0, 1.3, 0.8, 1.1}) {
    engine.push_back(around(scale, 0.02, 30));
    reference.push_back(around(2 * scale, 0.02, 30));
  }
  const Interval ratio = hierarchical_ratio_ci(reference, engine);
  EXPECT_GT(ratio.low, 1.95);
  EXPECT_LT(ratio.high, 2.05);
  const Interval e = hierarchical_median_ci(engine);
  EXPECT_GT(e.high / e.low, 1.2);
  EXPECT_EQ(hierarchical_ratio_ci({}, {}).low, 0);
}

TEST(HierarchicalBootstrap, GroupsFollowProcessIndices) {
  const ProcessGroups g = group_by_process({1, 2, 3, 4, 5}, {0, 1, 0, 3, 1});
  ASSERT_EQ(g.size(), 3u);  // process 2 took no samples: no group
  EXPECT_EQ(g[0], (std::vector<double>{1, 3}));
  EXPECT_EQ(g[1], (std::vector<double>{2, 5}));
  EXPECT_EQ(g[2], (std::vector<double>{4}));
  EXPECT_EQ(group_by_process({1, 2}, {}).size(), 1u);
}

CaseResult part(double engine_ms, double reference_ms, double load_after) {
  CaseResult r;
  r.spec.batch = 2;
  r.spec.timing.processes = 1;
  r.engine.executor = "engine";
  r.reference.executor = "reference";
  r.engine.samples_ms = {engine_ms, engine_ms, engine_ms};
  r.reference.samples_ms = {reference_ms, reference_ms, reference_ms};
  r.engine.first_iteration_ms = 10 * engine_ms;
  r.stop_reason = "converged";
  r.interference = {1.0, load_after, 100, 1000, 3000, 3000};
  r.build_log = "built\n";
  return r;
}

TEST(MergeProcessResults, KeepsEverySampleWithItsProcess) {
  std::vector<CaseResult> parts{part(1.0, 2.0, 1.1), part(1.1, 2.2, 1.2), part(1.2, 2.4, 1.3)};
  for (CaseResult& p : parts) p.spec.timing.target_rel_ci = 0.1;  // the merged intervals are ±9%
  const CaseResult r = merge_process_results(parts);
  EXPECT_EQ(r.status, fb::CaseStatus::kPassed);
  EXPECT_EQ(r.spec.timing.processes, 3);
  ASSERT_EQ(r.engine.samples_ms.size(), 9u);
  EXPECT_EQ(r.engine.sample_process, (std::vector<int>{0, 0, 0, 1, 1, 1, 2, 2, 2}));
  EXPECT_DOUBLE_EQ(r.engine.stats.median, 1.1);
  EXPECT_DOUBLE_EQ(r.reference.stats.median, 2.2);
  EXPECT_DOUBLE_EQ(r.speedup, 2.0);
  EXPECT_DOUBLE_EQ(r.engine.first_iteration_ms, 10.0);  // the first process's cold run
  EXPECT_DOUBLE_EQ(r.engine.items_per_s, 2 * 1000 / 1.1);
  // The speedup is 2 in every process: no spread, a point interval.
  EXPECT_NEAR(r.process_noise.speedup, 0, 1e-12);
  EXPECT_NEAR(r.speedup_ci_low, 2.0, 1e-12);
  EXPECT_NEAR(r.speedup_ci_high, 2.0, 1e-12);
  // Engine floors 1.0, 1.1, 1.2: their logs lie log(1.1 / 1.0) and log(1.2 / 1.1) from the
  // middle one; the median absolute deviation is the smaller, scaled to a standard deviation.
  EXPECT_NEAR(r.process_noise.engine, 1.4826 * std::log(1.2 / 1.1), 1e-12);
  EXPECT_EQ(r.process_noise.processes, 3);
  // The hierarchical interval spans the processes' medians.
  EXPECT_DOUBLE_EQ(r.engine.stats.boot_ci_low, 1.0);
  EXPECT_DOUBLE_EQ(r.engine.stats.boot_ci_high, 1.2);
  EXPECT_DOUBLE_EQ(r.interference.load_before, 1.0);
  EXPECT_DOUBLE_EQ(r.interference.load_after, 1.3);
  EXPECT_DOUBLE_EQ(r.interference.other_cpu_ms, 300);
  EXPECT_EQ(r.stop_reason, "converged");
  EXPECT_FALSE(r.noisy);
}

TEST(MergeProcessResults, AnErrorInAnyProcessIsTheResult) {
  CaseResult bad = part(1, 2, 1);
  bad.status = fb::CaseStatus::kError;
  bad.error = "case 'x': worker process 2 was killed by signal 9 (Killed)";
  const CaseResult r = merge_process_results({part(1, 2, 1), bad});
  EXPECT_EQ(r.status, fb::CaseStatus::kError);
  EXPECT_EQ(r.error, bad.error);
}

// Noisy is the case's own interval against the case's own target, not a vote of the
// processes (whose targets are widened by the square root of their number); stop_reason
// says what ended them.
TEST(MergeProcessResults, NoisyWhenTheMergedIntervalMissesTheCasesTarget) {
  // Processes at 1.0, 1.1 and 1.2 ms (references twice that): the merged intervals are ±9%.
  std::vector<CaseResult> parts{part(1, 2, 1), part(1.1, 2.2, 1), part(1.2, 2.4, 1)};
  for (CaseResult& p : parts) p.spec.timing.target_rel_ci = 0.1;
  CaseResult r = merge_process_results(parts);
  EXPECT_FALSE(r.noisy);
  EXPECT_EQ(r.stop_reason, "converged");
  // Every process stopped on a cap, missing its own target, yet the case's interval is
  // within its target: not noisy, and it says what ended the processes (most of them).
  for (CaseResult& p : parts) p.stop_reason = "time-cap", p.noisy = true;
  parts[0].stop_reason = "iteration-cap";
  r = merge_process_results(parts);
  EXPECT_FALSE(r.noisy);
  EXPECT_EQ(r.stop_reason, "time-cap");
  // A target tighter than the interval: noisy, though every process met its own.
  for (CaseResult& p : parts) p.spec.timing.target_rel_ci = 0.05, p.stop_reason = "converged", p.noisy = false;
  r = merge_process_results(parts);
  EXPECT_TRUE(r.noisy);
  EXPECT_EQ(r.stop_reason, "converged");
  // The speedup-ci rule asks the speedup's interval: here a point (2 in every process).
  for (CaseResult& p : parts) p.spec.timing.stop_rule = "speedup-ci";
  EXPECT_FALSE(merge_process_results(parts).noisy);
}

TEST(PerProcessTiming, SharesTheCapAndIterationsOut) {
  TimingConfig t;
  t.processes = 4;
  t.max_seconds = 8;
  t.min_iterations = 60;
  t.max_iterations = 1000;
  t.target_rel_ci = 0.01;
  const TimingConfig p = per_process_timing(t);
  EXPECT_EQ(p.processes, 1);
  EXPECT_DOUBLE_EQ(p.max_seconds, 2);
  EXPECT_EQ(p.min_iterations, 15);
  EXPECT_EQ(p.max_iterations, 250);
  EXPECT_DOUBLE_EQ(p.target_rel_ci, 0.02);
  t.min_iterations = 20;
  EXPECT_EQ(per_process_timing(t).min_iterations, 10);  // never fewer than 10 per process...
  t.min_iterations = 3;
  t.max_iterations = 3;
  t.processes = 1;
  EXPECT_EQ(per_process_timing(t).max_iterations, 3);  // ...unless the case's cap is lower
  EXPECT_EQ(per_process_timing(t).min_iterations, 3);
  t.min_iterations = 40;
  t.max_iterations = 40;
  t.processes = 5;
  EXPECT_EQ(per_process_timing(t).max_iterations, 8);  // 5 x 8 = the 40 asked for
  EXPECT_EQ(per_process_timing(t).min_iterations, 8);
}

// Writes a one-case scenario (an MLP from the zoo at batch 1, fusion standard, one thread)
// with this name, model query and timing block into `dir` as s.json; returns its path.
std::string one_case_scenario(const ScratchDir& dir, const std::string& name, const std::string& mlp,
                              const std::string& timing) {
  std::ofstream(dir.path("s.json")) << R"({"name": ")" << name << R"(", "model": "zoo:mlp?)" << mlp
                                    << R"(", "matrix": {"batch": [1], "fusion": ["standard"]}, "threads": 1, "timing": )"
                                    << timing << "}";
  return dir.path("s.json");
}

// Through the binary: two worker processes per case; a worker that aborts makes its case
// an error naming the case and the process, and the run goes on and stores everything.
TEST(WorkerProcesses, RunStoresProcessesAndSurvivesACrashingWorker) {
  const ScratchDir dir("fb_workers");
  const std::string scenario = one_case_scenario(
      dir, "workers", "in=32&hidden=64&out=8&layers=2",
      R"({"warmup_ms": 5, "min_iterations": 20, "max_seconds": 0.4, "processes": 2})");
  const std::string fb = FUSEBENCH_BINARY, db = dir.path("r.db");

  Outcome ok = sh(fb + " run " + scenario + " --db " + db);
  ASSERT_EQ(ok.code, 0) << ok.output;
  Outcome crash = sh("FUSEBENCH_TEST_WORKER_ABORT=1 " + fb + " run " + scenario + " --db " + db);
  EXPECT_EQ(crash.code, 2) << crash.output;
  EXPECT_NE(crash.output.find("case 'workers b=1 fp32 standard t=1': worker process 2 was killed by signal 6"),
            std::string::npos)
      << crash.output;
  EXPECT_NE(crash.output.find("0 passed, 0 failed, 1 errors"), std::string::npos) << crash.output;

  ResultStore store(db);
  const std::vector<StoredRun> runs = store.list_runs();
  ASSERT_EQ(runs.size(), 2u);
  const std::vector<StoredCase> good = store.load_cases(runs[0].id);
  ASSERT_EQ(good.size(), 1u);
  const CaseResult& r = good[0].result;
  EXPECT_EQ(r.spec.timing.processes, 2);
  EXPECT_EQ(r.process_noise.processes, 2);
  ASSERT_EQ(r.engine.sample_process.size(), r.engine.samples_ms.size());
  EXPECT_EQ(r.engine.sample_process.front(), 0);
  EXPECT_EQ(r.engine.sample_process.back(), 1);
  EXPECT_GE(r.engine.samples_ms.size(), 20u);  // at least 10 per process
  EXPECT_TRUE(std::isfinite(r.process_noise.speedup));
  const std::vector<StoredCase> bad = store.load_cases(runs[1].id);
  ASSERT_EQ(bad.size(), 1u);
  EXPECT_EQ(bad[0].result.status, fb::CaseStatus::kError);
}

// A case's max_iterations caps its samples, so it never gets more worker processes than
// that (each takes at least one sample): 10 processes asked, 3 iterations, 3 processes.
TEST(WorkerProcesses, NoMoreProcessesThanIterations) {
  const ScratchDir dir("fb_worker_cap");
  const std::string scenario = one_case_scenario(
      dir, "cap", "in=16&hidden=16&layers=1", R"({"warmup_ms": 1, "min_iterations": 3, "max_iterations": 3, "processes": 10})");
  const std::string db = dir.path("r.db");
  Outcome ok = sh(std::string(FUSEBENCH_BINARY) + " run " + scenario + " --db " + db);
  ASSERT_EQ(ok.code, 0) << ok.output;
  const std::vector<StoredCase> cases = ResultStore(db).load_cases(1);
  ASSERT_EQ(cases.size(), 1u);
  EXPECT_EQ(cases[0].result.engine.samples_ms.size(), 3u);
  EXPECT_EQ(cases[0].result.spec.timing.processes, 3);  // what it got, as stored
  EXPECT_EQ(cases[0].result.process_noise.processes, 3);
}

// A worker never starts workers: the variable every worker gets makes the call fail its
// case (an executable that is not fusebench would otherwise start copies of itself).
TEST(WorkerProcesses, AWorkerProcessNeverStartsWorkers) {
  ASSERT_EQ(setenv("FUSEBENCH_WORKER_PROCESS", "1", 1), 0);
  CaseSpec spec;
  spec.model = "zoo:mlp";
  const CaseResult r = run_in_worker_process(spec, 0, "/bin/true");
  unsetenv("FUSEBENCH_WORKER_PROCESS");
  EXPECT_EQ(r.status, fb::CaseStatus::kError);
  EXPECT_NE(r.error.find("this process is itself a worker process (FUSEBENCH_WORKER_PROCESS is set); is '/bin/true' the "
                         "fusebench binary?"),
            std::string::npos)
      << r.error;
}

}  // namespace
}  // namespace fb
