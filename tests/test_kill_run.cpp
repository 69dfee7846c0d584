// `kill -9` at seeded random moments, many times over, of a `fusebench run --resume`, of a
// `fusebench merge` and of a run's worker process: the database always opens, every stored
// case is whole (its measurements, every sample, every layer), and `run --resume` (or the
// merge run again) completes the same case set, each case once. FUSEBENCH_KILL_SEED picks
// another schedule (the default is fixed, so CI is repeatable); each test prints a
// `reliability:` line (scripts/reliability_doc.sh collects them into docs/reliability.md).
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
#include <vector>
#include <iostream>
#include <cstdlib>

#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"

namespace fs = std::filesystem;

namespace {

uint32_t kill_seed() {
  const char* s = std::getenv("FUSEBENCH_KILL_SEED");
  return s && *s ? static_cast<uint32_t>(std::stoul(s)) : 20261123u;
}

// `cmd` in a process of its own (sh exec's it, so the pid is fusebench's).
pid_t start_command(const std::string& cmd, const std::string& log) {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sh", "sh", "-c", ("exec " + cmd + " > " + log + " 2>&1").c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

pid_t start(const std::string& db, const std::string& scenario, const std::string& log) {
  return start_command(std::string(FUSEBENCH_BINARY) + " run " + scenario + " --db " + db + " --resume", log);
}

int wait_for(pid_t pid) {
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

// Every case stored in `db` is whole: passed, all its samples and layers.
void expect_whole_cases(const std::string& db, size_t samples) {
  fb::ResultStore store(db);  // opens: never unreadable
  for (const auto& run : store.list_runs())
    for (const auto& c : store.load_cases(run.id)) {
      const fb::CaseResult& r = c.result;
      ASSERT_EQ(r.status, fb::CaseStatus::kPassed) << r.error;
      EXPECT_EQ(r.engine.samples_ms.size(), samples);
      EXPECT_EQ(r.reference.samples_ms.size(), samples);
      EXPECT_EQ(r.engine.stats.n, samples);
      EXPECT_FALSE(r.layers.empty());
    }
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
  const uint32_t seed = kill_seed();
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> moment_ms(5, run_ms);
  int killed_mid_run = 0, partial = 0;
  for (int attempt = 0; attempt < 12; ++attempt) {
    const pid_t pid = start(db, scenario, log);
    std::this_thread::sleep_for(std::chrono::milliseconds(moment_ms(rng)));
    killed_mid_run += kill(pid, SIGKILL) == 0 && WIFSIGNALED(wait_for(pid));

    fb::ResultStore store(db);  // opens: never unreadable
    for (const auto& run : store.list_runs()) {
      const auto cases = store.load_cases(run.id);
      partial += run.finished_at.empty() && !cases.empty();
      for (const auto& c : cases) {
        const fb::CaseResult& r = c.result;
        ASSERT_EQ(r.status, fb::CaseStatus::kPassed) << r.error;
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
  std::cout << "reliability: kill -9 of `run --resume` | 12 (seed " << seed << ") | " << killed_mid_run
            << " killed mid-run, " << partial << " left a partial run; the database always opened, every stored case whole; "
            << "--resume completed all " << runs.size() << " runs, 12 cases each, each once\n";
  fs::remove_all(dir);
}

// A merge killed at any moment leaves an output that opens, with whole cases only (each
// case is copied in a transaction of its own), and the shards untouched; merging again
// completes the merged run with every case once.
TEST(KillRun, KillNineOfMergeLeavesAReadableOutputAndMergingAgainCompletesIt) {
  const fb::ScratchDir dir("fusebench_kill_merge");
  const std::string scenario = dir.path("m.json");
  std::ofstream(scenario) << R"({"name": "m", "model": "zoo:mlp?in=16&hidden=16&layers=1",
    "matrix": {"batch": [1, 2, 3], "fusion": ["none", "standard"]},
    "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 20, "max_iterations": 20, "max_seconds": 0.05,
                "processes": 1, "disturbance_cpus": 64}})";
  const std::string bin = FUSEBENCH_BINARY;
  std::string shards;
  for (const char* k : {"1", "2"}) {
    const std::string shard = dir.path(std::string("s") + k + ".db");
    const auto o = fb::sh(bin + " run " + scenario + " --db " + shard + " --shard " + k + "/2 --report " + dir.path("s.html"));
    ASSERT_EQ(o.code, 0) << o.output;
    shards += " " + shard;
  }
  const std::string shard_bytes = fb::sh("cat" + shards + " | sha256sum").output;
  const std::string merge = bin + " merge" + shards + " -o ";
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_EQ(fb::sh(merge + dir.path("whole.db")).code, 0);
  const int merge_ms = std::max(2, static_cast<int>(ms_since(t0)));

  const uint32_t seed = kill_seed() + 1;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> moment_us(0, merge_ms * 1000);
  const std::string out = dir.path("out.db");
  int killed = 0, partial = 0;
  for (int attempt = 0; attempt < 12; ++attempt) {
    fs::remove(out);
    fs::remove(out + "-wal");
    fs::remove(out + "-shm");
    const pid_t pid = start_command(merge + out, dir.path("log"));
    std::this_thread::sleep_for(std::chrono::microseconds(moment_us(rng)));
    killed += kill(pid, SIGKILL) == 0 && WIFSIGNALED(wait_for(pid));
    if (!fs::exists(out)) continue;
    expect_whole_cases(out, 20);
    size_t n = 0;  // killed before it began its run, the output holds the schema alone
    {
      fb::ResultStore store(out);
      for (const auto& run : store.list_runs()) n += store.load_cases(run.id).size();
    }
    partial += n > 0 && n < 6;
    // Merging again completes it, each case once.
    const auto again = fb::sh(merge + out);
    ASSERT_EQ(again.code, 0) << again.output;
    fb::ResultStore store(out);
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    std::set<std::string> keys;
    for (const auto& c : store.load_cases(runs[0].id)) EXPECT_TRUE(keys.insert(c.result.spec.case_key()).second);
    EXPECT_EQ(keys.size(), 6u);
    EXPECT_FALSE(runs[0].finished_at.empty());
  }
  EXPECT_EQ(fb::sh("cat" + shards + " | sha256sum").output, shard_bytes) << "a shard was modified";
  std::cout << "reliability: kill -9 of `merge` | 12 (seed " << seed << ") | " << killed << " killed mid-merge, " << partial
            << " left some of the 6 cases merged; the output always opened with whole cases only, the shards unchanged; "
            << "merging again completed the run, 6 cases each once\n";
}

// The pids of `parent`'s worker processes (`fusebench worker ...`).
std::vector<pid_t> workers_of(pid_t parent) {
  std::vector<pid_t> out;
  std::ifstream f("/proc/" + std::to_string(parent) + "/task/" + std::to_string(parent) + "/children");
  for (pid_t p; f >> p;) {
    std::ifstream cmdline("/proc/" + std::to_string(p) + "/cmdline");
    std::string argv0, argv1;
    std::getline(cmdline, argv0, '\0');
    std::getline(cmdline, argv1, '\0');
    if (argv1 == "worker") out.push_back(p);
  }
  return out;
}

// A worker process killed by SIGKILL (the OOM killer, an operator) is a lost attempt: its
// case is stored as lost, the run stays unfinished, and --resume runs the case again.
TEST(KillRun, KillNineOfAWorkerProcessIsALostAttemptThatResumeRunsAgain) {
  const fb::ScratchDir dir("fusebench_kill_worker");
  const std::string scenario = dir.path("w.json"), db = dir.path("w.db");
  std::ofstream(scenario) << R"({"name": "w", "model": "zoo:mlp?in=64&hidden=64&layers=2",
    "matrix": {"batch": [1, 2, 4]},
    "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 200, "max_iterations": 200, "max_seconds": 0.3,
                "processes": 2, "disturbance_cpus": 64}})";
  const uint32_t seed = kill_seed() + 2;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> moment_ms(0, 150);
  int killed = 0, lost = 0;
  for (int attempt = 0; attempt < 6; ++attempt) {
    const pid_t pid = start(db, scenario, dir.path("log"));
    // Wait for a worker of this run, then kill it a random moment later.
    pid_t victim = 0;
    for (int i = 0; i < 2000 && !victim; ++i) {
      for (pid_t c : workers_of(pid)) victim = c;
      if (!victim) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (victim) {
      std::this_thread::sleep_for(std::chrono::milliseconds(moment_ms(rng)));
      killed += kill(victim, SIGKILL) == 0;
    }
    const int status = wait_for(pid);
    ASSERT_TRUE(WIFEXITED(status)) << "the run itself survives its worker's death";
    fb::ResultStore store(db);
    for (const auto& run : store.list_runs())
      for (const auto& c : store.load_cases(run.id)) {
        if (c.result.worker_lost) {
          ++lost;
          EXPECT_NE(c.result.error.find("killed by signal 9 (SIGKILL, from outside)"), std::string::npos) << c.result.error;
          continue;
        }
        ASSERT_EQ(c.result.status, fb::CaseStatus::kPassed) << c.result.error;
        EXPECT_EQ(c.result.engine.samples_ms.size(), 200u);
      }
  }
  EXPECT_GT(killed, 0);
  EXPECT_GT(lost, 0);
  // Resume until nothing is lost: at most one more run, since nothing kills it now.
  const auto o = fb::sh(std::string(FUSEBENCH_BINARY) + " run " + scenario + " --db " + db + " --resume");
  ASSERT_EQ(o.code, 0) << o.output;
  fb::ResultStore store(db);
  for (const auto& run : store.list_runs()) {
    std::set<std::string> keys;
    for (const auto& c : store.load_cases(run.id)) {
      EXPECT_FALSE(c.result.worker_lost);
      EXPECT_EQ(c.result.status, fb::CaseStatus::kPassed) << c.result.error;
      EXPECT_TRUE(keys.insert(c.result.spec.case_key()).second);
    }
    EXPECT_EQ(keys.size(), 3u) << "run " << run.id;
    EXPECT_FALSE(run.finished_at.empty()) << "run " << run.id;
  }
  std::cout << "reliability: kill -9 of a worker process | 6 (seed " << seed << ") | " << killed << " workers killed, "
            << lost << " cases stored as lost (run left unfinished); --resume ran them again: every run complete, "
            << "3 cases each once, all passed\n";
}

}  // namespace
