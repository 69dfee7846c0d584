// `mpirun -np 3 fusebench run` on this machine: the same set of cases as a single-process
// run, each with its host and isolation policy; a worker killed mid-run costs only its own
// case, stored as lost with the reason and host, and `run --resume` completes the run; a
// case that outlives --case-timeout is stored as lost too. Skipped where this fusebench
// was built without MPI or mpirun is not installed.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <optional>
#include <set>
#include <thread>

#include "harness/run/mpi_run.h"
#include "harness/run/run_loop.h"
#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"

namespace fs = std::filesystem;

namespace {

const char* kMpirun = "mpirun --oversubscribe --allow-run-as-root --enable-recovery";

class MpiRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fb::built_with_mpi()) GTEST_SKIP() << "built without MPI";
    if (fb::sh("command -v mpirun").code != 0) GTEST_SKIP() << "mpirun not installed";
    dir_.emplace("fusebench_mpi");
  }
  std::string path(const std::string& name) const { return dir_->path(name); }
  void scenario(const std::string& name, double max_seconds, int iterations) const {
    std::ofstream(path(name + ".json")) << R"({"name": ")" << name << R"(", "model": "zoo:mlp?in=16&hidden=16&layers=1",
      "matrix": {"batch": [1, 2, 3], "fusion": ["none", "standard"]},
      "timing": {"disturbance_cpus": 64, "warmup_ms": 1, "warmup_iterations": 1, "min_iterations": )"
                                        << std::min(iterations, 5) << R"(, "max_iterations": )" << iterations
                                        << R"(, "max_seconds": )" << max_seconds << R"(, "target_rel_ci": 0.000001}})";
  }
  std::string run(const std::string& scenario_name, const std::string& db, const std::string& extra = "") const {
    return std::string(FUSEBENCH_BINARY) + " run " + path(scenario_name + ".json") + " --db " + path(db) + " --report " +
           path("r.html") + " " + extra;
  }
  std::multiset<std::string> case_keys(const std::string& db, int64_t run) const {
    std::multiset<std::string> keys;
    for (const auto& c : fb::ResultStore(path(db)).load_cases(run)) keys.insert(c.result.spec.case_key());
    return keys;
  }
  std::optional<fb::ScratchDir> dir_;  // made once the test is known to run
};

// One rank per GPU: "cuda" becomes the GPU of the rank's place on its host, wrapping past
// the last; an explicit device, the CPU, one GPU or no launcher leave it as asked.
TEST(RankDevice, EachLocalRankTakesItsOwnGpu) {
  EXPECT_EQ(fb::device_for_local_rank("cuda", 0, 4), "cuda:0");
  EXPECT_EQ(fb::device_for_local_rank("cuda", 3, 4), "cuda:3");
  EXPECT_EQ(fb::device_for_local_rank("cuda", 5, 4), "cuda:1");
  EXPECT_EQ(fb::device_for_local_rank("cuda", 2, 2), "cuda:0");
  EXPECT_EQ(fb::device_for_local_rank("cuda:1", 0, 4), "cuda:1");
  EXPECT_EQ(fb::device_for_local_rank("cpu", 1, 4), "cpu");
  EXPECT_EQ(fb::device_for_local_rank("cuda", 1, 1), "cuda");
  EXPECT_EQ(fb::device_for_local_rank("cuda", -1, 4), "cuda");
}

TEST_F(MpiRunTest, ThreeRanksStoreTheSameCasesAsOneProcess) {
  scenario("m", 0.05, 5);
  auto single = fb::sh(run("m", "single.db"));
  ASSERT_EQ(single.code, 0) << single.output;
  auto o = fb::sh(std::string(kMpirun) + " -np 3 " + run("m", "mpi.db"));
  ASSERT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("coordinator: "), std::string::npos) << o.output;
  EXPECT_EQ(case_keys("mpi.db", 1), case_keys("single.db", 1));
  fb::ResultStore store(path("mpi.db"));
  EXPECT_EQ(store.list_runs().size(), 1u);
  EXPECT_FALSE(store.load_run(1).finished_at.empty());
  for (const auto& c : store.load_cases(1)) {
    EXPECT_EQ(c.result.status, fb::CaseStatus::kPassed) << c.result.error;
    EXPECT_EQ(c.result.isolation, "host-exclusive");
    EXPECT_EQ(c.result.timed_on.host, store.load_run(1).info.host);
    EXPECT_EQ(c.result.engine.samples_ms.size(), 5u);  // max_iterations
  }
}

TEST_F(MpiRunTest, CoresPerWorkerPinsEachWorkerToItsOwnCores) {
  scenario("p", 0.05, 5);
  auto o = fb::sh(std::string(kMpirun) + " -np 3 " + run("p", "p.db", "--cores-per-worker 1"));
  ASSERT_EQ(o.code, 0) << o.output;
  std::set<std::string> pinned;
  for (const auto& c : fb::ResultStore(path("p.db")).load_cases(1)) {
    EXPECT_EQ(c.result.isolation, "cores-per-worker=1");
    pinned.insert(c.result.pinned_cpus);
  }
  EXPECT_TRUE(pinned.count("0") || pinned.count("1")) << o.output;
  for (const std::string& p : pinned) EXPECT_TRUE(p == "0" || p == "1") << p;
}

TEST_F(MpiRunTest, ACaseWithMoreThreadsThanCoresPerWorkerIsRefusedBeforeARunBegins) {
  std::ofstream(path("wide.json")) << R"({"name": "wide", "model": "zoo:mlp?in=16&hidden=16&layers=1", "threads": 2,
    "timing": {"warmup_ms": 1, "min_iterations": 3, "max_iterations": 3}})";
  // Without --enable-recovery, mpirun passes rank 0's exit code on.
  const auto o = fb::sh("mpirun --oversubscribe --allow-run-as-root -np 2 " + std::string(FUSEBENCH_BINARY) + " run " +
                        path("wide.json") + " --db " + path("wide.db") + " --cores-per-worker 1");
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find("case 'wide b=1 fp32 standard t=2' uses 2 threads, more than --cores-per-worker 1"),
            std::string::npos)
      << o.output;
  EXPECT_TRUE(fb::ResultStore(path("wide.db")).list_runs().empty());  // no empty run left behind
}

// The pid of the fusebench process that is MPI rank `rank` among our own children's children.
pid_t find_rank(int rank) {
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream env(e.path() / "environ");
    std::string all((std::istreambuf_iterator<char>(env)), {});
    const std::string want = "OMPI_COMM_WORLD_RANK=" + std::to_string(rank) + '\0';
    if (all.find(want) != std::string::npos && all.find("FUSEBENCH_TEST_MPI_TAG=" + std::to_string(getpid())) != std::string::npos)
      return static_cast<pid_t>(std::stol(name));
  }
  return 0;
}

// Whether a rank is inside a case: it times each case in child worker processes.
bool has_child_process(pid_t pid) {
  std::ifstream children("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::string first;
  return static_cast<bool>(children >> first);
}

TEST_F(MpiRunTest, AKilledWorkerCostsOnlyItsCaseAndResumeCompletesTheRun) {
  scenario("k", 0.4, 1000000);  // each case times for 0.4 s per executor (the time cap)
  // Two workers, one per core, so that rank 2 is busy with a case when it is killed (with
  // one case per host at a time, rank 1 would take every case).
  const std::string tag = "FUSEBENCH_TEST_MPI_TAG=" + std::to_string(getpid());
  pid_t mpirun = fork();
  if (mpirun == 0) {
    const std::string cmd =
        "exec env " + tag + " " + kMpirun + " -np 3 " + run("k", "k.db", "--cores-per-worker 1") + " > " + path("log") + " 2>&1";
    execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  // Wait until rank 2 exists and the run has stored at least one case, then kill rank 2.
  pid_t victim = 0;
  for (int i = 0; i < 300 && !victim; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    size_t stored = 0;
    try {  // the file can exist before rank 0 has begun its run
      if (fs::exists(path("k.db"))) stored = fb::ResultStore(path("k.db")).load_cases(1, fb::CaseDetail::kSummary).size();
    } catch (const std::exception&) {
    }
    // Killed inside a case: a worker killed between cases costs no case (rank 0 gives the
    // next one to another worker), and this test is about the case it was running.
    if (stored >= 1)
      if (const pid_t r2 = find_rank(2); r2 && has_child_process(r2)) victim = r2;
  }
  ASSERT_NE(victim, 0) << "rank 2 never showed up";
  ASSERT_EQ(kill(victim, SIGKILL), 0);
  int status = 0;
  waitpid(mpirun, &status, 0);
  std::ifstream logf(path("log"));
  const std::string log((std::istreambuf_iterator<char>(logf)), {});

  fb::ResultStore store(path("k.db"));
  const auto cases = store.load_cases(1);
  ASSERT_EQ(cases.size(), 6u) << log;  // every case has a record: five results, one lost
  int lost = 0;
  for (const auto& c : cases) {
    if (!c.result.worker_lost) {
      EXPECT_EQ(c.result.status, fb::CaseStatus::kPassed) << c.result.error;
      continue;
    }
    ++lost;
    EXPECT_EQ(c.result.status, fb::CaseStatus::kError);
    EXPECT_NE(c.result.error.find("MPI rank 2 (pid " + std::to_string(victim) + " on " + store.load_run(1).info.host +
                                  ") died while running this case"),
              std::string::npos)
        << c.result.error;
    EXPECT_EQ(c.result.timed_on.host, store.load_run(1).info.host);
  }
  EXPECT_EQ(lost, 1) << log;
  EXPECT_TRUE(store.load_run(1).finished_at.empty()) << log;  // left for --resume
  // mpirun --enable-recovery exits 0 whatever rank 0 returned; the gate is the exit status.
  const auto gate = fb::sh(std::string(FUSEBENCH_BINARY) + " gate --db " + path("k.db"));
  EXPECT_EQ(gate.code, 1) << gate.output;
  EXPECT_NE(gate.output.find("run 1 never finished"), std::string::npos) << gate.output;

  // --resume (single-process here) runs the lost case again and replaces its record.
  const auto o = fb::sh(run("k", "k.db", "--resume"));
  EXPECT_EQ(o.code, 0) << o.output;
  EXPECT_NE(o.output.find("5 cases already stored, 1 to run"), std::string::npos) << o.output;
  const auto after = fb::ResultStore(path("k.db")).load_cases(1, fb::CaseDetail::kSummary);
  ASSERT_EQ(after.size(), 6u);
  for (const auto& c : after) EXPECT_EQ(c.result.status, fb::CaseStatus::kPassed) << c.result.error;
  EXPECT_FALSE(fb::ResultStore(path("k.db")).load_run(1).finished_at.empty());
  EXPECT_EQ(fb::sh(std::string(FUSEBENCH_BINARY) + " gate --db " + path("k.db")).code, 0);
}

TEST_F(MpiRunTest, ACaseThatOutlivesTheTimeoutIsStoredAsLost) {
  scenario("t", 3, 1000000);  // 3 s per executor, far past the 1 s timeout
  auto o = fb::sh(std::string(kMpirun) + " -np 2 " + run("t", "t.db", "--case-timeout 1"));
  // (mpirun --enable-recovery exits 0 whatever rank 0 returned; the stored run, and the
  // gate that reads it, say what happened.)
  fb::ResultStore store(path("t.db"));
  const auto cases = store.load_cases(1, fb::CaseDetail::kSummary);
  ASSERT_EQ(cases.size(), 1u) << o.output;  // the only worker hung: its case is lost, the rest never ran
  EXPECT_TRUE(cases[0].result.worker_lost);
  EXPECT_NE(cases[0].result.error.find("sent no result within 1 s"), std::string::npos) << cases[0].result.error;
  EXPECT_NE(o.output.find("every worker is gone; 5 case(s) not run"), std::string::npos) << o.output;
  EXPECT_TRUE(store.load_run(1).finished_at.empty());
}

// kill -9 of a random rank (rank 0, the one writer, included) at a random moment, several
// times (FUSEBENCH_KILL_SEED picks another schedule): without --enable-recovery mpirun then
// ends the whole job, so the database is left by a job killed anywhere. It always opens,
// every stored case is whole, and --resume completes the same case set, each case once.
TEST_F(MpiRunTest, KillNineOfARandomRankAtRandomMomentsNeverLeavesAHalfWrittenCase) {
  scenario("r", 0.1, 1000000);
  const std::string tag = "FUSEBENCH_TEST_MPI_TAG=" + std::to_string(getpid());
  const char* seed_env = std::getenv("FUSEBENCH_KILL_SEED");
  const uint32_t seed = (seed_env && *seed_env ? static_cast<uint32_t>(std::stoul(seed_env)) : 20261123u) + 3;
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> rank_of(0, 2), moment_ms(300, 2500);
  int killed = 0;
  std::multiset<int> ranks;
  for (int attempt = 0; attempt < 3; ++attempt) {
    const pid_t mpirun = fork();
    if (mpirun == 0) {
      const std::string cmd = "exec env " + tag + " mpirun --oversubscribe --allow-run-as-root -np 3 " +
                              run("r", "r.db", "--cores-per-worker 1 --resume") + " > " + path("log") + " 2>&1";
      execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    const int rank = rank_of(rng);
    std::this_thread::sleep_for(std::chrono::milliseconds(moment_ms(rng)));
    if (const pid_t victim = find_rank(rank); victim && kill(victim, SIGKILL) == 0) {
      ++killed;
      ranks.insert(rank);
    }
    int status = 0;
    for (int i = 0; i < 600 && waitpid(mpirun, &status, WNOHANG) == 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    if (waitpid(mpirun, &status, WNOHANG) == 0) {
      kill(mpirun, SIGKILL);
      waitpid(mpirun, &status, 0);
      FAIL() << "mpirun did not end within 60 s of rank " << rank << " being killed";
    }
    if (!fs::exists(path("r.db"))) continue;
    fb::ResultStore store(path("r.db"));  // opens: never unreadable
    for (const auto& run : store.list_runs())
      for (const auto& c : store.load_cases(run.id)) {
        if (c.result.worker_lost) continue;  // a lost attempt, run again by --resume
        ASSERT_EQ(c.result.status, fb::CaseStatus::kPassed) << c.result.error;
        EXPECT_FALSE(c.result.engine.samples_ms.empty());
        EXPECT_EQ(c.result.engine.samples_ms.size(), c.result.engine.stats.n);
      }
  }
  const auto o = fb::sh(run("r", "r.db", "--resume"));
  ASSERT_EQ(o.code, 0) << o.output;
  fb::ResultStore store(path("r.db"));
  const auto runs = store.list_runs();
  for (const auto& run : runs) {
    std::set<std::string> keys;
    for (const auto& c : store.load_cases(run.id)) {
      EXPECT_EQ(c.result.status, fb::CaseStatus::kPassed) << c.result.error;
      EXPECT_TRUE(keys.insert(c.result.spec.case_key()).second);
    }
    EXPECT_EQ(keys.size(), 6u) << "run " << run.id;
    EXPECT_FALSE(run.finished_at.empty()) << "run " << run.id;
  }
  std::cout << "reliability: kill -9 of an MPI rank (mpirun -np 3) | 3 (seed " << seed << ") | " << killed
            << " ranks killed (ranks " << (ranks.count(0) ? "0 " : "") << (ranks.count(1) ? "1 " : "")
            << (ranks.count(2) ? "2 " : "") << "among them), mpirun ended each job; the database always opened, every "
            << "stored case whole; --resume completed all " << runs.size() << " runs, 6 cases each, each once\n";
}

}  // namespace
