// report, compare, history and export read a database while `fusebench run` writes to it
// (WAL: readers never wait for the writer, nor it for them): the run finishes with every
// case stored and exit 0, every reader exits 0, and no reader ever sees half a case (a case
// with one executor's row, or fewer samples than its iterations). Prints how many reads ran
// during the run and the run's wall time beside a run without readers (measured, not
// asserted: on a loaded machine readers take CPU the timing would otherwise have).
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"

namespace fb {
namespace {

const std::string kBin = FUSEBENCH_BINARY;
constexpr int kIterations = 1000;

pid_t start_run(const std::string& scenario, const std::string& db, const std::string& log) {
  const pid_t pid = fork();
  if (pid == 0) {
    const std::string cmd = "exec " + kBin + " run " + scenario + " --db " + db + " --report " + db + ".html > " + log + " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// Half a case in an export: a case of run 3 (the one being written) with other than one
// engine and one reference row, or a row with fewer samples than the case's iterations.
std::string half_case_in(const std::string& export_json) {
  std::map<std::string, int> rows;
  for (const auto& row : nlohmann::json::parse(export_json)) {
    if (row.at("run").get<int>() != 3) continue;
    ++rows[row.at("case_key").get<std::string>()];
    if (row.at("samples").get<int>() != kIterations) return "a row with " + row.at("samples").dump() + " samples";
  }
  for (const auto& [key, n] : rows)
    if (n != 2) return "case " + key + " with " + std::to_string(n) + " rows";
  return "";
}

TEST(ConcurrentReaders, ReadWhileARunWritesWithoutBlockingItOrSeeingHalfACase) {
  const ScratchDir dir("fb_concurrent_readers");
  const std::string scenario = dir.path("c.json"), db = dir.path("c.db");
  std::ofstream(scenario) << R"({"name": "c", "model": "zoo:mlp?in=256&hidden=512&layers=3",
    "matrix": {"batch": [1, 2, 4, 8], "fusion": ["none", "standard"]},
    "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": )"
                          << kIterations << R"(, "max_iterations": )" << kIterations << R"(, "processes": 1,
               "disturbance_cpus": 64}})";
  // Runs 1 and 2, alone: compare has a baseline whichever run is the latest, and run 2 is
  // the wall time and the timings without readers.
  ASSERT_EQ(sh(kBin + " run " + scenario + " --db " + db).code, 0);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(sh(kBin + " run " + scenario + " --db " + db).code, 0);
  const double alone_s = seconds_since(t0);

  t0 = std::chrono::steady_clock::now();
  const pid_t writer = start_run(scenario, db, dir.path("run.log"));
  std::map<std::string, int> reads, failures;
  std::string half;
  int status = 0;
  while (waitpid(writer, &status, WNOHANG) == 0) {
    for (const std::string& cmd : {"export --format json --db " + db + " -o " + dir.path("e.json"),
                                   "report --db " + db + " -o " + dir.path("r.html"), "compare --db " + db,
                                   "history --db " + db}) {
      const Outcome o = sh(kBin + " " + cmd);
      const std::string name = cmd.substr(0, cmd.find(' '));
      ++reads[name];
      if (o.code != 0) {
        ++failures[name];
        ADD_FAILURE() << cmd << "\n" << o.output;
      }
      if (name == "export" && o.code == 0 && half.empty()) {
        std::ifstream f(dir.path("e.json"));
        half = half_case_in(std::string(std::istreambuf_iterator<char>(f), {}));
      }
    }
  }
  const double with_readers_s = seconds_since(t0);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(half, "");
  EXPECT_GT(reads["export"], 1) << "the run ended before readers could overlap it";
  ResultStore store(db, ResultStore::Mode::kReadOnly);
  const auto alone = store.load_cases(2), read = store.load_cases(3);
  ASSERT_EQ(read.size(), 8u);
  EXPECT_FALSE(store.load_run(3).finished_at.empty());
  // The engine's median time with readers against alone, case by case (their median ratio).
  std::vector<double> ratios;
  for (const StoredCase& c : read) {
    for (const StoredCase& a : alone)
      if (a.result.spec.case_key() == c.result.spec.case_key())
        ratios.push_back(c.result.engine.stats.median / a.result.engine.stats.median);
  }
  ASSERT_EQ(ratios.size(), 8u);
  std::sort(ratios.begin(), ratios.end());
  const double median_ratio = (ratios[3] + ratios[4]) / 2;
  std::cout << std::fixed << std::setprecision(1) << "reliability: report, compare, history and export while `run` writes | "
            << reads["export"] << " rounds of the four | "
            << failures["export"] + failures["report"] + failures["compare"] + failures["history"]
            << " reader failures, no half case seen, the run finished with all 8 cases; its wall time " << with_readers_s
            << " s against " << alone_s << " s alone; engine median time with readers / alone: " << std::setprecision(2)
            << median_ratio << " (median of 8 cases)\n";
}

}  // namespace
}  // namespace fb
