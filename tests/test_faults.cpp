// Faults around a run, through the binary: a full disk (a small tmpfs in a user and mount
// namespace of its own, so no root is needed), a read-only database (the same tmpfs
// remounted read-only), a database locked past the busy timeout, a damaged database and a
// plan file cut short. Each gives one clear error naming the file and exit 2, and every
// case stored before the fault is still there, whole, afterwards.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "harness/store/result_store.h"
#include "scratch_dir.h"
#include "shell_command.h"
#include "sql_exec.h"

namespace fs = std::filesystem;

namespace fb {
namespace {

const std::string kBin = FUSEBENCH_BINARY;

std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(f), {});
}

// A two-case scenario that takes well under a second.
std::string tiny_scenario(const ScratchDir& dir, const std::string& name) {
  const std::string path = dir.path(name + ".json");
  std::ofstream(path) << R"({"name": ")" << name << R"(", "model": "zoo:mlp?in=8&hidden=8&layers=1",
    "matrix": {"batch": [1, 2]},
    "timing": {"warmup_ms": 1, "warmup_iterations": 1, "min_iterations": 5, "max_iterations": 5, "processes": 1,
               "disturbance_cpus": 64}})";
  return path;
}

// Every stored case of every run, whole: (run id, status, samples) per case, in order.
std::vector<std::string> stored_cases(const std::string& db) {
  std::vector<std::string> out;
  ResultStore store(db, ResultStore::Mode::kReadOnly);
  for (const StoredRun& run : store.list_runs())
    for (const StoredCase& c : store.load_cases(run.id))
      out.push_back(std::to_string(run.id) + " " + c.result.spec.label() + " " + case_status_name(c.result.status) + " " +
                    std::to_string(c.result.engine.samples_ms.size()) + "/" +
                    std::to_string(c.result.reference.samples_ms.size()));
  return out;
}

int error_lines(const std::string& output) {
  int n = 0;
  for (size_t at = output.find("error:"); at != std::string::npos; at = output.find("error:", at + 1)) ++n;
  return n;
}

// Runs `script` as root of a user and mount namespace of its own (unshare -rm), where it
// may mount a tmpfs; false when this machine allows no such namespace.
bool namespaces_available() { return sh("unshare -rm true").code == 0; }

TEST(Faults, AFullDiskIsOneClearErrorAndKeepsWhatWasStored) {
  if (!namespaces_available()) GTEST_SKIP() << "unshare -rm is not permitted here (no user namespaces)";
  const ScratchDir dir("fb_fault_full");
  const std::string scenario = tiny_scenario(dir, "full");
  // On a 4 MiB tmpfs: one run stores its cases, a file then takes the rest of the space,
  // and the next run fails; with the file gone, the database is copied out to be read.
  const std::string script = "set -e; m=" + dir.path("mnt") + "; mkdir -p $m; mount -t tmpfs -o size=4m tmpfs $m; " +
                             kBin + " run " + scenario + " --db $m/r.db --report $m/r1.html > " + dir.path("first.txt") +
                             " 2>&1; dd if=/dev/zero of=$m/filler bs=4k 2>/dev/null || true; set +e; " + kBin +
                             " run " + scenario + " --db $m/r.db --report " + dir.path("r2.html") + "; echo \"exit=$?\"; " +
                             "rm $m/filler; cp $m/r.db* " + dir.path("") + "; umount $m";
  const Outcome o = sh("unshare -rm sh -c '" + script + "'");
  ASSERT_NE(o.output.find("exit="), std::string::npos) << o.output << read_bytes(dir.path("first.txt"));
  EXPECT_NE(o.output.find("exit=2"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("r.db: the disk is full"), std::string::npos) << o.output;
  EXPECT_EQ(error_lines(o.output), 1) << o.output;
  const std::vector<std::string> cases = stored_cases(dir.path("r.db"));
  ASSERT_GE(cases.size(), 2u);
  EXPECT_EQ(cases[0], "1 full b=1 fp32 standard t=1 passed 5/5");
  EXPECT_EQ(cases[1], "1 full b=2 fp32 standard t=1 passed 5/5");
  EXPECT_EQ(test::query_one(dir.path("r.db"), "PRAGMA integrity_check"), "ok");
  std::cout << "reliability: a full disk (4 MiB tmpfs, filled) under `run` | 1 | exit 2, one error (\""
            << "the disk is full\"); the cases stored before intact (integrity_check ok)\n";
}

TEST(Faults, AReadOnlyDatabaseIsOneClearErrorAndStaysAsItWas) {
  if (!namespaces_available()) GTEST_SKIP() << "unshare -rm is not permitted here (no user namespaces)";
  const ScratchDir dir("fb_fault_ro");
  const std::string scenario = tiny_scenario(dir, "ro");
  ASSERT_EQ(sh(kBin + " run " + scenario + " --db " + dir.path("r.db")).code, 0);
  const std::string before = read_bytes(dir.path("r.db"));
  // The database on a tmpfs remounted read-only (root ignores a file's mode bits).
  const std::string script = "set -e; m=" + dir.path("mnt") + "; mkdir -p $m; mount -t tmpfs tmpfs $m; cp " +
                             dir.path("r.db") + " $m/; mount -o remount,ro $m; set +e; " + kBin + " run " + scenario +
                             " --db $m/r.db --report " + dir.path("r.html") + "; echo \"exit=$?\"; cp $m/r.db " + dir.path("after.db") +
                             "; umount $m";
  const Outcome o = sh("unshare -rm sh -c '" + script + "'");
  EXPECT_NE(o.output.find("exit=2"), std::string::npos) << o.output;
  EXPECT_NE(o.output.find("mnt/r.db is read-only"), std::string::npos) << o.output;
  EXPECT_EQ(error_lines(o.output), 1) << o.output;
  EXPECT_EQ(read_bytes(dir.path("after.db")), before);
  EXPECT_EQ(stored_cases(dir.path("after.db")), stored_cases(dir.path("r.db")));
  std::cout << "reliability: a read-only database (tmpfs remounted read-only) under `run` | 1 | exit 2, one error "
            << "(\"is read-only\"), the file byte for byte as before\n";
}

TEST(Faults, ADatabaseLockedPastTheBusyTimeoutIsOneClearError) {
  const ScratchDir dir("fb_fault_locked");
  const std::string scenario = tiny_scenario(dir, "locked"), db = dir.path("r.db");
  ASSERT_EQ(sh(kBin + " run " + scenario + " --db " + db).code, 0);
  const std::vector<std::string> before = stored_cases(db);
  sqlite3* holder = nullptr;
  ASSERT_EQ(sqlite3_open(db.c_str(), &holder), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(holder, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr), SQLITE_OK);
  const Outcome o = sh(kBin + " run " + scenario + " --db " + db);
  sqlite3_exec(holder, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(holder);
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_NE(o.output.find(db + " is locked by another process (still busy after waiting)"), std::string::npos) << o.output;
  EXPECT_EQ(error_lines(o.output), 1) << o.output;
  EXPECT_EQ(stored_cases(db), before);
  // And once the lock is gone the same command runs.
  EXPECT_EQ(sh(kBin + " run " + scenario + " --db " + db).code, 0);
  EXPECT_EQ(stored_cases(db).size(), 4u);
  std::cout << "reliability: a database locked (BEGIN EXCLUSIVE) past the 5 s busy timeout under `run` | 1 | exit 2, "
            << "one error (\"is locked by another process\"), the stored cases unchanged; the same run once unlocked "
            << "stored its cases\n";
}

TEST(Faults, ADamagedDatabaseIsOneClearErrorAndIsLeftUntouched) {
  const ScratchDir dir("fb_fault_damaged");
  const std::string scenario = tiny_scenario(dir, "damaged"), db = dir.path("r.db");
  ASSERT_EQ(sh(kBin + " run " + scenario + " --db " + db).code, 0);
  ASSERT_EQ(test::exec_sql(db, "PRAGMA wal_checkpoint(TRUNCATE)"), "");
  // Zeroes over the middle of the file: its pages' headers and cells gone.
  std::string bytes = read_bytes(db);
  ASSERT_GT(bytes.size(), 16384u);
  std::fill(bytes.begin() + 4096, bytes.begin() + bytes.size() - 4096, '\x5a');
  std::ofstream(db, std::ios::binary | std::ios::trunc) << bytes;
  const std::vector<std::string> commands = {"run " + scenario + " --db " + db, "report --db " + db + " -o " + dir.path("r.html"),
                                             "export --db " + db, "compare --db " + db, "history --db " + db};
  for (const std::string& command : commands) {
    const Outcome o = sh(kBin + " " + command);
    EXPECT_EQ(o.code, 2) << command << "\n" << o.output;
    EXPECT_NE(o.output.find(db + " is corrupt"), std::string::npos) << command << "\n" << o.output;
    EXPECT_EQ(error_lines(o.output), 1) << command << "\n" << o.output;
    EXPECT_EQ(read_bytes(db), bytes) << command;
  }
  std::cout << "reliability: a damaged database (all but its first and last 4 KiB overwritten) under run, report, "
            << "export, compare, history | " << commands.size() << " | each exit 2, one error (\"is corrupt\"), the "
            << "file left byte for byte as it was\n";
}

TEST(Faults, APlanFileCutShortIsOneClearError) {
  const ScratchDir dir("fb_fault_plan");
  const std::string plan = dir.path("m.plan"), cut = dir.path("cut.plan");
  ASSERT_EQ(sh(kBin + " build zoo:mlp?in=8\\&hidden=8\\&layers=1 -o " + plan).code, 0);
  const std::string bytes = read_bytes(plan);
  const std::vector<size_t> cuts = {0, 5, 20, bytes.size() / 2, bytes.size() - 1};
  for (size_t keep : cuts) {
    std::ofstream(cut, std::ios::binary | std::ios::trunc) << bytes.substr(0, keep);
    for (const std::string& command : {"exec " + cut + " --save-outputs " + dir.path("out"), "inspect " + cut}) {
      const Outcome o = sh(kBin + " " + command);
      EXPECT_EQ(o.code, 2) << keep << " bytes: " << command << "\n" << o.output;
      EXPECT_NE(o.output.find(cut), std::string::npos) << keep << " bytes: " << o.output;
      EXPECT_EQ(error_lines(o.output), 1) << keep << " bytes: " << o.output;
    }
  }
  std::cout << "reliability: a plan file cut short (0, 5, 20 bytes, half, all but one byte) under exec and inspect | "
            << 2 * cuts.size() << " | each exit 2, one error naming the file\n";
}

}  // namespace
}  // namespace fb
