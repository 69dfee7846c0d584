// `fusebench run --resume`: after an interruption, the latest unfinished run of the same
// scenarios is continued — the cases it stored are skipped, the rest are added to that run,
// and it is marked finished. Anything else starts a new run.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "harness/store/result_store.h"

namespace fs = std::filesystem;

namespace {

int run_command(const std::string& cmd, std::string* out) {
  const std::string path = fs::temp_directory_path() / ("fusebench_resume_out_" + std::to_string(getpid()));
  const int status = std::system((cmd + " > " + path + " 2>&1").c_str());
  std::ifstream f(path);
  out->assign(std::istreambuf_iterator<char>(f), {});
  fs::remove(path);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

void sql(const std::string& db, const std::string& text) {
  sqlite3* h = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &h), SQLITE_OK);
  char* err = nullptr;
  EXPECT_EQ(sqlite3_exec(h, ("PRAGMA foreign_keys = ON; " + text).c_str(), nullptr, nullptr, &err), SQLITE_OK)
      << (err ? err : "");
  sqlite3_free(err);
  sqlite3_close(h);
}

TEST(Resume, ContinuesTheInterruptedRunOfTheSameScenarios) {
  const fs::path dir = fs::temp_directory_path() / ("fusebench_resume_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string db = (dir / "r.db").string(), scenario = (dir / "tiny.json").string(),
                    other = (dir / "other.json").string();
  const char* body = R"("model": "zoo:mlp?in=32&hidden=32&layers=1",
    "matrix": {"batch": [1, 2], "fusion": ["none", "standard"]},
    "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 10, "max_iterations": 20, "max_seconds": 0.2,
               "disturbance_cpus": 64}})";
  std::ofstream(scenario) << "{\"name\": \"tiny\", " << body;
  std::ofstream(other) << "{\"name\": \"other\", " << body;
  const std::string bin = FUSEBENCH_BINARY;
  std::string out;
  ASSERT_EQ(run_command(bin + " run " + scenario + " --db " + db, &out), 0) << out;

  // Interrupt it after two cases: the last two were never stored, the run never finished.
  sql(db, "DELETE FROM cases WHERE id IN (SELECT id FROM cases ORDER BY id DESC LIMIT 2); "
          "UPDATE runs SET finished_at = NULL");
  ASSERT_EQ(run_command(bin + " run " + scenario + " --db " + db + " --resume", &out), 0) << out;
  EXPECT_NE(out.find("run 1 resumed: 2 cases already stored, 2 to run"), std::string::npos) << out;
  EXPECT_NE(out.find("[1/2] tiny b=2 fp32 none t=1"), std::string::npos) << out;
  EXPECT_NE(out.find("(and 2 stored before the interruption)"), std::string::npos) << out;
  {
    fb::ResultStore store(db);
    const auto runs = store.list_runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_FALSE(runs[0].finished_at.empty());
    const auto cases = store.load_cases(1);
    ASSERT_EQ(cases.size(), 4u);
    EXPECT_EQ(cases[2].result.spec.batch, 2);
    EXPECT_EQ(cases[3].result.spec.fusion, fb::FusionLevel::Standard);
  }

  // Nothing interrupted now: --resume starts a new run, and says so.
  ASSERT_EQ(run_command(bin + " run " + scenario + " --db " + db + " --resume", &out), 0) << out;
  EXPECT_NE(out.find("resume: no interrupted run of these scenarios"), std::string::npos) << out;
  EXPECT_NE(out.find("run 2: 4 cases"), std::string::npos) << out;

  // An interrupted run of other scenarios is not continued.
  sql(db, "UPDATE runs SET finished_at = NULL WHERE id = 2");
  ASSERT_EQ(run_command(bin + " run " + other + " --db " + db + " --resume", &out), 0) << out;
  EXPECT_NE(out.find("run 3: 4 cases"), std::string::npos) << out;
  fs::remove_all(dir);
}

}  // namespace
