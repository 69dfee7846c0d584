// `kill -9` of a single-process `fusebench run` at seeded random moments, many times over:
// the database always opens, every stored case is whole (its measurements, every sample,
// every layer), and `run --resume` completes the run.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <thread>

#include "harness/result_store.h"
#include "shell_command.h"

namespace fs = std::filesystem;

namespace {

pid_t start(const std::string& db, const std::string& scenario, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    const std::string cmd = std::string(FUSEBENCH_BINARY) + " run " + scenario + " --db " + db + " --resume > " + log + " 2>&1";
    execl("/bin/sh", "sh", "-c", ("exec " + cmd).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

TEST(KillRun, KillNineAtRandomMomentsNeverLeavesAHalfWrittenCase) {
  const fs::path dir = fs::temp_directory_path() / ("fusebench_kill_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "k.db").string(), scenario = (dir / "k.json").string(), log = (dir / "log").string();
  std::ofstream(scenario) << R"({"name": "k", "model": "zoo:mlp?in=16&hidden=16&layers=1",
    "matrix": {"batch": [1, 2, 3, 4], "fusion": ["none", "standard", "aggressive"]},
    "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 40, "max_iterations": 40, "max_seconds": 0.05,
                "processes": 2, "disturbance_cpus": 64}})";

  // The kills land anywhere in a whole run's time, measured here first: under load a run
  // takes several times longer, and a fixed window would only ever kill its start.
  const auto t0 = std::chrono::steady_clock::now();
  const auto whole = fb::sh(std::string(FUSEBENCH_BINARY) + " run " + scenario + " --db " + (dir / "whole.db").string() +
                            " --report " + (dir / "whole.html").string());
  ASSERT_EQ(whole.code, 0) << whole.output;
  const int run_ms = static_cast<int>(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  std::mt19937 rng(20261123);
  std::uniform_int_distribution<int> moment_ms(5, run_ms);
  int killed_mid_run = 0, partial = 0;
  for (int attempt = 0; attempt < 12; ++attempt) {
    const pid_t pid = start(db, scenario, log);
    std::this_thread::sleep_for(std::chrono::milliseconds(moment_ms(rng)));
    killed_mid_run += kill(pid, SIGKILL) == 0;
    int status = 0;
    waitpid(pid, &status, 0);

    fb::ResultStore store(db);  // opens: never unreadable
    for (const auto& run : store.list_runs()) {
      const auto cases = store.load_cases(run.id);
      partial += run.finished_at.empty() && !cases.empty();
      for (const auto& c : cases) {
        const fb::CaseResult& r = c.result;
        ASSERT_EQ(r.status, "passed") << r.error;
        EXPECT_EQ(r.engine.samples_ms.size(), 40u);
        EXPECT_EQ(r.reference.samples_ms.size(), 40u);
        EXPECT_EQ(r.engine.stats.n, 40u);
        EXPECT_FALSE(r.layers.empty());
      }
    }
  }
  EXPECT_GT(killed_mid_run, 0);
  EXPECT_GT(partial, 0);  // some kills landed between the first case and the last

  // And --resume finishes what the kills left, each case once.
  const auto o = fb::sh(std::string(FUSEBENCH_BINARY) + " run " + scenario + " --db " + db + " --resume --report " +
                        (dir / "r.html").string());
  ASSERT_EQ(o.code, 0) << o.output;
  // Each attempt resumed the one unfinished run, if any, so now every run is complete.
  fb::ResultStore store(db);
  const auto runs = store.list_runs();
  ASSERT_FALSE(runs.empty());
  for (const auto& run : runs) {
    std::set<std::string> keys;
    const auto cases = store.load_cases(run.id);
    for (const auto& c : cases) EXPECT_TRUE(keys.insert(c.result.spec.case_key()).second);
    EXPECT_EQ(cases.size(), 12u) << "run " << run.id;
    EXPECT_FALSE(run.finished_at.empty()) << "run " << run.id;
  }
  fs::remove_all(dir);
}

}  // namespace
