#include "harness/result_store.h"

#include <sqlite3.h>

#include <cmath>
#include <filesystem>
#include <iterator>
#include <limits>
#include <string_view>
#include <utility>

#include "engine/ir/error.h"
#include "engine/util/build_info.h"

namespace fb {
namespace {

using json = nlohmann::json;

// ---------------------------------------------------------------------------------------
// Schema and migrations
//
// Each step takes the database from version `to_version - 1` to `to_version`. All pending
// steps are applied together in one transaction, and meta.schema_version is set to the
// last one. Never edit a step that has shipped: append a new one and bump
// ResultStore::kSchemaVersion. A database newer than the last step here is refused.
// ---------------------------------------------------------------------------------------

constexpr const char* kSchemaV1 = R"sql(
-- meta: facts about the database file itself, as key/value pairs. 'schema_version' is the
-- last migration applied; a fusebench that knows fewer refuses the file.
CREATE TABLE meta (
  key   TEXT PRIMARY KEY,
  value NOT NULL
);

-- runs: one row per `fusebench run` (or per shard of one): when it ran and the environment
-- fingerprint (RunInfo) that every figure in its cases is traced to.
CREATE TABLE runs (
  id                INTEGER PRIMARY KEY,
  started_at        TEXT NOT NULL,       -- ISO 8601 UTC
  finished_at       TEXT,                -- NULL while running, or when interrupted
  git_commit        TEXT NOT NULL,
  git_dirty         INTEGER NOT NULL CHECK (git_dirty IN (0, 1)),
  host              TEXT NOT NULL,
  cpu_model         TEXT NOT NULL,
  cpu_flags         TEXT NOT NULL,
  cores             INTEGER NOT NULL,
  memory_bytes      INTEGER NOT NULL,
  kernel            TEXT NOT NULL,
  compiler          TEXT NOT NULL,
  library_versions  TEXT NOT NULL,       -- JSON: {"onednn": "2.6.3", "onnx": "1.12.0", ...}
  fusebench_version TEXT NOT NULL,
  command           TEXT NOT NULL
);

-- cases: one row per case result of a run: its configuration (queryable columns, plus the
-- exact CaseSpec as JSON), verdict, accuracy and summary figures. case_key is the stable
-- identity that follows a case across runs (compare, history).
CREATE TABLE cases (
  id              INTEGER PRIMARY KEY,
  run_id          INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  case_key        TEXT NOT NULL,         -- CaseSpec::case_key()
  scenario        TEXT NOT NULL,
  scenario_file   TEXT NOT NULL,
  model           TEXT NOT NULL,
  model_hash      TEXT NOT NULL,
  precision       TEXT NOT NULL,
  batch           INTEGER NOT NULL,
  fusion          TEXT NOT NULL,
  threads         INTEGER NOT NULL,
  config_json     TEXT NOT NULL,         -- CaseSpec::to_json(): also timing, tolerances, seed
  status          TEXT NOT NULL CHECK (status IN ('passed', 'failed', 'error')),
  error           TEXT NOT NULL,         -- '' unless status = 'error'
  max_abs_err     REAL,                  -- here and below, a NULL REAL stands for NaN
  max_rel_err     REAL,
  cosine          REAL,
  accuracy_passed INTEGER NOT NULL CHECK (accuracy_passed IN (0, 1)),
  accuracy_detail TEXT NOT NULL,
  speedup         REAL,                  -- reference median / engine median
  stop_reason     TEXT NOT NULL,         -- why timing stopped: converged, time-cap, iteration-cap
  build_ms        REAL,
  onnx_nodes      INTEGER NOT NULL,
  layer_count     INTEGER NOT NULL       -- how many rows this case has in layers
);
CREATE INDEX cases_run_id ON cases(run_id);
CREATE INDEX cases_case_key ON cases(case_key);

-- measurements: one row per executor of a case ('engine' or 'reference', the CaseResult
-- member it fills): summary statistics of its samples, in milliseconds.
CREATE TABLE measurements (
  id                 INTEGER PRIMARY KEY,
  case_id            INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  executor           TEXT NOT NULL,
  n                  INTEGER NOT NULL,
  median_ms          REAL,
  p90_ms             REAL,
  p99_ms             REAL,
  mean_ms            REAL,
  stddev_ms          REAL,
  min_ms             REAL,
  max_ms             REAL,
  ci_low_ms          REAL,               -- 95% confidence interval of the median
  ci_high_ms         REAL,
  items_per_s        REAL,
  first_iteration_ms REAL,               -- the cold first run, not among the samples
  UNIQUE (case_id, executor)             -- also serves as the index on case_id
);

-- samples: every timed iteration of a measurement, in the order run.
CREATE TABLE samples (
  measurement_id INTEGER NOT NULL REFERENCES measurements(id) ON DELETE CASCADE,
  iteration      INTEGER NOT NULL,       -- 0-based position in the run
  ms             REAL NOT NULL,
  PRIMARY KEY (measurement_id, iteration)  -- also serves as the index on measurement_id
) WITHOUT ROWID;

-- build_logs: the engine builder's log for a case; no row when it logged nothing.
CREATE TABLE build_logs (
  case_id INTEGER PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,
  text    TEXT NOT NULL
);

-- layers: the engine's layer map for a case: every engine layer and the source ONNX nodes
-- it was built from (the answer to "where did my node go after fusion").
CREATE TABLE layers (
  case_id      INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  layer_index  INTEGER NOT NULL,
  name         TEXT NOT NULL,
  kind         TEXT NOT NULL,            -- op type of the engine layer
  sources_json TEXT NOT NULL,            -- JSON array of source ONNX node names
  PRIMARY KEY (case_id, layer_index)     -- also serves as the index on case_id
) WITHOUT ROWID;
)sql";

// Version 2: what the measurement now records (issue 6). Columns are added, never changed,
// so a version-1 file upgrades in place and keeps every row; figures that version 1 did not
// measure read back as NULL (NaN) or 0, never as made-up values.
constexpr const char* kSchemaV2 = R"sql(
-- runs: the compiler flags beside the compiler, and the scenarios a run was started with
-- (JSON [{"name": ..., "file": ...}]) so `run --resume` can find the run to continue.
ALTER TABLE runs ADD COLUMN compiler_flags TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN scenarios_json TEXT NOT NULL DEFAULT '[]';

-- cases: whether the stopping rule's target was missed (noisy), the speedup's 95% bootstrap
-- interval, the timer's overhead, signs of interference around the timed phase, the CPU
-- pinning used, and the engine's memory.
ALTER TABLE cases ADD COLUMN noisy INTEGER NOT NULL DEFAULT 0 CHECK (noisy IN (0, 1));
ALTER TABLE cases ADD COLUMN speedup_ci_low REAL;
ALTER TABLE cases ADD COLUMN speedup_ci_high REAL;
ALTER TABLE cases ADD COLUMN timer_overhead_ns REAL;
ALTER TABLE cases ADD COLUMN load_before REAL;          -- 1-minute load average
ALTER TABLE cases ADD COLUMN load_after REAL;
ALTER TABLE cases ADD COLUMN other_cpu_ms REAL;         -- CPU time of other processes while timing
ALTER TABLE cases ADD COLUMN timed_wall_ms REAL;        -- wall time of the timed phase
ALTER TABLE cases ADD COLUMN cpu_mhz_before REAL;       -- mean current CPU clock; NULL: unreadable
ALTER TABLE cases ADD COLUMN cpu_mhz_after REAL;
ALTER TABLE cases ADD COLUMN pinned_cpus TEXT NOT NULL DEFAULT '';  -- "2,3"; '' when not pinned
ALTER TABLE cases ADD COLUMN engine_memory_bytes INTEGER;           -- the activation arena
ALTER TABLE cases ADD COLUMN reference_memory_bytes INTEGER;        -- the reference's peak of live activations
-- Version 1 printed "noisy" for any run that did not converge; keep that judgement.
UPDATE cases SET noisy = (stop_reason <> 'converged');

-- measurements: more of the distribution, the median's bootstrap interval, Tukey outlier
-- counts, and page faults per timed iteration.
ALTER TABLE measurements ADD COLUMN p95_ms REAL;
ALTER TABLE measurements ADD COLUMN cv REAL;             -- stddev / mean
ALTER TABLE measurements ADD COLUMN boot_ci_low_ms REAL; -- 95% seeded bootstrap interval of the median
ALTER TABLE measurements ADD COLUMN boot_ci_high_ms REAL;
ALTER TABLE measurements ADD COLUMN outliers_low INTEGER;  -- below Q1 - 1.5 IQR
ALTER TABLE measurements ADD COLUMN outliers_high INTEGER; -- above Q3 + 1.5 IQR
ALTER TABLE measurements ADD COLUMN minor_faults_min INTEGER;
ALTER TABLE measurements ADD COLUMN minor_faults_max INTEGER;
ALTER TABLE measurements ADD COLUMN minor_faults_mean REAL;
ALTER TABLE measurements ADD COLUMN major_faults_min INTEGER;
ALTER TABLE measurements ADD COLUMN major_faults_max INTEGER;
ALTER TABLE measurements ADD COLUMN major_faults_mean REAL;
)sql";

// Version 3: engine profiles (`fusebench profile --db`) and the machine peaks they are
// measured against, cached per host, CPU and thread count.
constexpr const char* kSchemaV3 = R"sql(
-- profiles: one per `fusebench profile --db` run: what was built and the totals.
CREATE TABLE profiles (
  id          INTEGER PRIMARY KEY,
  created_at  TEXT NOT NULL,
  git_commit  TEXT NOT NULL,
  model       TEXT NOT NULL,
  model_hash  TEXT NOT NULL,
  config_json TEXT NOT NULL,            -- fusion, batch, threads, limits
  iterations  INTEGER NOT NULL,
  total_ms    REAL NOT NULL,            -- sum of layer medians
  peak_gflops REAL NOT NULL,
  peak_gbps   REAL NOT NULL
);
-- profile_layers: each engine layer's median time and work.
CREATE TABLE profile_layers (
  profile_id   INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  layer_index  INTEGER NOT NULL,
  name TEXT NOT NULL, kind TEXT NOT NULL, kernel TEXT NOT NULL,
  median_ms    REAL NOT NULL,
  flops        REAL NOT NULL,
  bytes        REAL NOT NULL,
  sources_json TEXT NOT NULL,
  PRIMARY KEY (profile_id, layer_index)
) WITHOUT ROWID;
-- profile_nodes: time per source ONNX node; estimated = apportioned from a fused layer.
CREATE TABLE profile_nodes (
  profile_id  INTEGER NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,
  node        TEXT NOT NULL,
  module      TEXT NOT NULL,
  layer_index INTEGER NOT NULL,
  ms          REAL NOT NULL,
  estimated   INTEGER NOT NULL CHECK (estimated IN (0, 1))
);
CREATE INDEX profile_nodes_profile ON profile_nodes(profile_id);
-- machine_peaks: measured once per host, CPU model and thread count, then reused.
CREATE TABLE machine_peaks (
  host TEXT NOT NULL, cpu_model TEXT NOT NULL, threads INTEGER NOT NULL,
  gflops REAL NOT NULL, gbps REAL NOT NULL, measured_at TEXT NOT NULL,
  PRIMARY KEY (host, cpu_model, threads)
);
)sql";

struct Migration {
  int to_version;
  const char* what;
  const char* sql;
};

constexpr Migration kMigrations[] = {
    {1, "initial schema", kSchemaV1},
    {2, "noise flag, bootstrap intervals, interference, page faults", kSchemaV2},
    {3, "engine profiles and cached machine peaks", kSchemaV3},
};
static_assert(kMigrations[std::size(kMigrations) - 1].to_version == ResultStore::kSchemaVersion,
              "the last migration must bring the schema to ResultStore::kSchemaVersion");

// ---------------------------------------------------------------------------------------
// Thin SQLite helpers
// ---------------------------------------------------------------------------------------

// One message per kind of failure, always naming the file. `doing` completes "cannot ...".
[[noreturn]] void throw_db_error(sqlite3* db, const std::string& path, int rc,
                                 const std::string& doing) {
  std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw Error(path + " is locked by another process (still busy after waiting); cannot " +
                  doing + ": " + msg);
    case SQLITE_NOTADB:
      throw Error(path + " is not a SQLite database (" + msg +
                  "); is it the right file? fusebench left it untouched");
    case SQLITE_CORRUPT:
      throw Error(path + " is corrupt (" + msg + "); cannot " + doing);
    case SQLITE_FULL:
      throw Error(path + ": the disk is full; cannot " + doing);
    case SQLITE_READONLY:
    case SQLITE_PERM:
      throw Error(path + " is read-only (" + msg + "); cannot " + doing);
    case SQLITE_CANTOPEN:
      throw Error("cannot open " + path + " (" + msg + ")");
    default:
      throw Error(path + ": cannot " + doing + ": " + msg);
  }
}

void exec(sqlite3* db, const std::string& path, const char* sql, const std::string& doing) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  sqlite3_free(err);  // sqlite3_errmsg(db) still holds the message
  if (rc != SQLITE_OK) throw_db_error(db, path, rc, doing);
}

// Rolls back the open transaction, if any; used on the way out of a failure, so it never
// throws and the original error is the one reported.
void rollback_quietly(sqlite3* db) noexcept {
  if (db && !sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
}

// A prepared statement with bound parameters (values never go into SQL text).
class Stmt {
 public:
  Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(path) {
    int rc = sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr);
    if (rc != SQLITE_OK) {
      sqlite3_finalize(stmt_);
      throw_db_error(db, path, sqlite3_extended_errcode(db), "prepare a query");
    }
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  void bind_int(int i, int64_t v) { check(sqlite3_bind_int64(stmt_, i, v)); }
  void bind_bool(int i, bool v) { bind_int(i, v ? 1 : 0); }
  void bind_real(int i, double v) {
    // SQLite would turn NaN into NULL anyway; say so explicitly.
    check(std::isnan(v) ? sqlite3_bind_null(stmt_, i) : sqlite3_bind_double(stmt_, i, v));
  }
  void bind_text(int i, std::string_view v) {
    check(sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }

  // true: a row is ready; false: done. Errors throw, naming what was being done.
  bool step(const std::string& doing) {
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    throw_db_error(db_, path_, rc, doing);
  }
  // For statements that return no rows; resets so the statement can be bound again.
  void run(const std::string& doing) {
    while (step(doing)) {
    }
    reset();
  }
  void reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }

  bool is_null(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  int64_t int_at(int col) const { return sqlite3_column_int64(stmt_, col); }
  double real_at(int col) const {
    return is_null(col) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(stmt_, col);
  }
  std::string text_at(int col) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, col));
    int n = sqlite3_column_bytes(stmt_, col);
    return p ? std::string(p, static_cast<size_t>(n)) : std::string();
  }
  int type_at(int col) const { return sqlite3_column_type(stmt_, col); }

 private:
  void check(int rc) {
    if (rc != SQLITE_OK) throw_db_error(db_, path_, rc, "bind a query parameter");
  }
  sqlite3* db_;
  const std::string& path_;
  sqlite3_stmt* stmt_ = nullptr;
};

// A read transaction, so that a multi-query load sees one consistent snapshot even while
// another process commits cases.
class ReadSnapshot {
 public:
  ReadSnapshot(sqlite3* db, const std::string& path) : db_(db) {
    exec(db, path, "BEGIN", "start reading");
  }
  ~ReadSnapshot() { rollback_quietly(db_); }  // nothing was written: ending it is enough

 private:
  sqlite3* db_;
};

std::string dump_json(const json& j) {
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json parse_json(const std::string& text, const std::string& path, const std::string& where) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(path + ": " + where + " is not valid JSON: " + e.what());
  }
}

// Reads meta.schema_version: 0 for an empty database (never migrated). Refuses a database
// that is not ours. Reading the schema is also where a file that is not a database at all
// shows itself (SQLITE_NOTADB), before anything has been written to it.
int read_schema_version(sqlite3* db, const std::string& path) {
  bool has_meta = false;
  int other_tables = 0;
  {
    Stmt s(db, path, "SELECT name FROM sqlite_master WHERE type = 'table'");
    while (s.step("read the database schema")) {
      std::string name = s.text_at(0);
      if (name == "meta") has_meta = true;
      else if (name.rfind("sqlite_", 0) != 0) ++other_tables;
    }
  }
  if (!has_meta) {
    if (other_tables > 0)
      throw Error(path + " is a SQLite database but not a fusebench result store (it has no "
                         "meta table); fusebench left it untouched");
    return 0;
  }
  Stmt s(db, path, "SELECT value FROM meta WHERE key = 'schema_version'");
  if (!s.step("read the schema version"))
    throw Error(path + " is not a fusebench result store (its meta table has no schema_version)");
  int64_t v = -1;
  if (s.type_at(0) == SQLITE_INTEGER) {
    v = s.int_at(0);
  } else if (s.type_at(0) == SQLITE_TEXT) {
    try {
      size_t used = 0;
      std::string t = s.text_at(0);
      v = std::stoll(t, &used);
      if (used != t.size()) v = -1;
    } catch (const std::exception&) {
      v = -1;
    }
  }
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw Error(path + " has an unreadable schema version '" + s.text_at(0) +
                "' in its meta table; is it a fusebench result store?");
  return static_cast<int>(v);
}

// Column lists shared by the run queries, so that read_run_row's indexes stay in step.
constexpr const char* kRunColumns =
    "r.id, r.started_at, r.git_commit, r.git_dirty, r.host, r.cpu_model, r.cpu_flags, r.cores, "
    "r.memory_bytes, r.kernel, r.compiler, r.library_versions, r.fusebench_version, r.command, "
    "r.finished_at, (SELECT count(*) FROM cases c WHERE c.run_id = r.id), r.compiler_flags, r.scenarios_json";

StoredRun read_run_row(const Stmt& s, const std::string& path) {
  StoredRun run;
  run.id = s.int_at(0);
  RunInfo& i = run.info;
  i.started_at = s.text_at(1);
  i.git_commit = s.text_at(2);
  i.git_dirty = s.int_at(3) != 0;
  i.host = s.text_at(4);
  i.cpu_model = s.text_at(5);
  i.cpu_flags = s.text_at(6);
  i.cores = static_cast<int>(s.int_at(7));
  i.memory_bytes = s.int_at(8);
  i.kernel = s.text_at(9);
  i.compiler = s.text_at(10);
  i.library_versions =
      parse_json(s.text_at(11), path, "library_versions of run " + std::to_string(run.id));
  i.fusebench_version = s.text_at(12);
  i.command = s.text_at(13);
  run.finished_at = s.text_at(14);  // NULL reads as ""
  run.case_count = static_cast<int>(s.int_at(15));
  i.compiler_flags = s.text_at(16);
  i.scenarios = parse_json(s.text_at(17), path, "scenarios_json of run " + std::to_string(run.id));
  return run;
}

std::string run_missing(int64_t run_id, const std::string& path) {
  return "run " + std::to_string(run_id) + " is not in " + path;
}

bool run_exists(sqlite3* db, const std::string& path, int64_t run_id) {
  Stmt s(db, path, "SELECT 1 FROM runs WHERE id = ?1");
  s.bind_int(1, run_id);
  return s.step("look up run " + std::to_string(run_id));
}

}  // namespace

// ---------------------------------------------------------------------------------------
// Opening and migrating
// ---------------------------------------------------------------------------------------

ResultStore::ResultStore(const std::string& path) : path_(path) {
  try {
    open_and_migrate();
  } catch (...) {
    close();
    throw;
  }
}

ResultStore::~ResultStore() { close(); }

ResultStore::ResultStore(ResultStore&& other) noexcept
    : path_(std::move(other.path_)),
      db_(std::exchange(other.db_, nullptr)),
      busy_timeout_ms_(other.busy_timeout_ms_) {}

ResultStore& ResultStore::operator=(ResultStore&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    db_ = std::exchange(other.db_, nullptr);
    busy_timeout_ms_ = other.busy_timeout_ms_;
  }
  return *this;
}

void ResultStore::close() noexcept {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

sqlite3* ResultStore::db() const {
  FB_CHECK(db_ != nullptr, "use of a moved-from ResultStore");
  return db_;
}

void ResultStore::open_and_migrate() {
  if (path_.empty()) throw Error("the result database path is empty");
  int rc = sqlite3_open_v2(path_.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                           nullptr);
  if (rc != SQLITE_OK) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path parent = fs::absolute(path_, ec).parent_path();
    if (fs::is_directory(path_, ec))
      throw Error("cannot open " + path_ + ": it is a folder, not a database file");
    if (!parent.empty() && !fs::is_directory(parent, ec))
      throw Error("cannot open " + path_ + ": its folder " + parent.string() + " does not exist");
    throw_db_error(db_, path_, rc, "open it");
  }
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, busy_timeout_ms_);

  // Look before touching: every refusal below leaves the file as it was.
  int version = read_schema_version(db_, path_);
  if (version > kSchemaVersion)
    throw Error(path_ + " has schema version " + std::to_string(version) +
                "; this fusebench understands up to " + std::to_string(kSchemaVersion) +
                " — upgrade fusebench");

  exec(db_, path_, "PRAGMA foreign_keys = ON", "enable foreign keys");
  {
    // WAL: readers (report, compare) never block the writer, nor the writer them.
    Stmt wal(db_, path_, "PRAGMA journal_mode = WAL");
    while (wal.step("switch to WAL journaling")) {
    }
  }
  exec(db_, path_, "PRAGMA synchronous = NORMAL", "set synchronous = NORMAL");

  if (version == kSchemaVersion) return;
  exec(db_, path_, "BEGIN IMMEDIATE", "create or upgrade the schema");
  try {
    version = read_schema_version(db_, path_);  // another process may have just migrated it
    for (const Migration& m : kMigrations) {
      if (m.to_version <= version) continue;
      exec(db_, path_, m.sql,
           "upgrade the schema to version " + std::to_string(m.to_version) + " (" + m.what + ")");
    }
    Stmt set(db_, path_,
             "INSERT INTO meta (key, value) VALUES ('schema_version', ?1) "
             "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    set.bind_int(1, kSchemaVersion);
    set.run("record the schema version");
    exec(db_, path_, "COMMIT", "commit the schema upgrade");
  } catch (...) {
    rollback_quietly(db_);
    throw;
  }
}

int ResultStore::schema_version() const { return read_schema_version(db(), path_); }

void ResultStore::set_busy_timeout_ms(int ms) {
  sqlite3_busy_timeout(db(), ms);
  busy_timeout_ms_ = ms;
}

// ---------------------------------------------------------------------------------------
// Writing
// ---------------------------------------------------------------------------------------

int64_t ResultStore::begin_run(const RunInfo& info) {
  Stmt s(db(), path_,
         "INSERT INTO runs (started_at, git_commit, git_dirty, host, cpu_model, cpu_flags, cores, "
         "memory_bytes, kernel, compiler, library_versions, fusebench_version, command, compiler_flags, "
         "scenarios_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)");
  s.bind_text(1, info.started_at);
  s.bind_text(2, info.git_commit);
  s.bind_bool(3, info.git_dirty);
  s.bind_text(4, info.host);
  s.bind_text(5, info.cpu_model);
  s.bind_text(6, info.cpu_flags);
  s.bind_int(7, info.cores);
  s.bind_int(8, info.memory_bytes);
  s.bind_text(9, info.kernel);
  s.bind_text(10, info.compiler);
  s.bind_text(11, dump_json(info.library_versions));
  s.bind_text(12, info.fusebench_version);
  s.bind_text(13, info.command);
  s.bind_text(14, info.compiler_flags);
  s.bind_text(15, dump_json(info.scenarios.is_null() ? json::array() : info.scenarios));
  s.run("record a new run");
  return sqlite3_last_insert_rowid(db_);
}

void ResultStore::finish_run(int64_t run_id) {
  Stmt s(db(), path_, "UPDATE runs SET finished_at = ?1 WHERE id = ?2");
  s.bind_text(1, utc_now_iso8601());
  s.bind_int(2, run_id);
  s.run("mark run " + std::to_string(run_id) + " finished");
  if (sqlite3_changes(db_) == 0) throw Error(run_missing(run_id, path_));
}

int64_t ResultStore::write_profile(const StoredProfile& sp) {
  const std::string what = "store the profile of " + sp.model;
  exec(db(), path_, "BEGIN IMMEDIATE", what);
  try {
    Stmt p(db_, path_,
           "INSERT INTO profiles (created_at, git_commit, model, model_hash, config_json, iterations, total_ms, "
           "peak_gflops, peak_gbps) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    p.bind_text(1, utc_now_iso8601());
    p.bind_text(2, fusebench_git_commit());
    p.bind_text(3, sp.model);
    p.bind_text(4, sp.model_hash);
    p.bind_text(5, sp.config_json);
    p.bind_int(6, sp.profile.iterations);
    p.bind_real(7, sp.profile.total_ms);
    p.bind_real(8, sp.peaks.gflops);
    p.bind_real(9, sp.peaks.gbps);
    p.run(what);
    const int64_t id = sqlite3_last_insert_rowid(db_);
    Stmt l(db_, path_,
           "INSERT INTO profile_layers (profile_id, layer_index, name, kind, kernel, median_ms, flops, bytes, sources_json) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)");
    for (const LayerProfile& lp : sp.profile.layers) {
      l.bind_int(1, id);
      l.bind_int(2, lp.index);
      l.bind_text(3, lp.name);
      l.bind_text(4, lp.kind);
      l.bind_text(5, lp.kernel);
      l.bind_real(6, lp.median_ms);
      l.bind_real(7, lp.flops);
      l.bind_real(8, lp.bytes);
      l.bind_text(9, dump_json(json(lp.sources)));
      l.run(what);
    }
    Stmt n(db_, path_,
           "INSERT INTO profile_nodes (profile_id, node, module, layer_index, ms, estimated) VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
    for (const NodeProfile& np : sp.profile.nodes) {
      n.bind_int(1, id);
      n.bind_text(2, np.node);
      n.bind_text(3, np.module);
      n.bind_int(4, np.layer);
      n.bind_real(5, np.ms);
      n.bind_bool(6, np.estimated);
      n.run(what);
    }
    exec(db_, path_, "COMMIT", what);
    return id;
  } catch (...) {
    rollback_quietly(db_);
    throw;
  }
}

std::optional<MachinePeaks> ResultStore::cached_peaks(const std::string& host, const std::string& cpu_model, int threads) const {
  Stmt s(db(), path_, "SELECT gflops, gbps FROM machine_peaks WHERE host = ?1 AND cpu_model = ?2 AND threads = ?3");
  s.bind_text(1, host);
  s.bind_text(2, cpu_model);
  s.bind_int(3, threads);
  if (!s.step("read the cached machine peaks")) return std::nullopt;
  return MachinePeaks{s.real_at(0), s.real_at(1)};
}

void ResultStore::store_peaks(const std::string& host, const std::string& cpu_model, int threads, const MachinePeaks& peaks) {
  Stmt s(db(), path_,
         "INSERT OR REPLACE INTO machine_peaks (host, cpu_model, threads, gflops, gbps, measured_at) "
         "VALUES (?1, ?2, ?3, ?4, ?5, ?6)");
  s.bind_text(1, host);
  s.bind_text(2, cpu_model);
  s.bind_int(3, threads);
  s.bind_real(4, peaks.gflops);
  s.bind_real(5, peaks.gbps);
  s.bind_text(6, utc_now_iso8601());
  s.run("cache the machine peaks");
}

void ResultStore::write_case(int64_t run_id, const CaseResult& r) {
  const CaseSpec& spec = r.spec;
  const std::string what = "store case '" + spec.label() + "'";
  exec(db(), path_, "BEGIN IMMEDIATE", what);
  try {
    if (!run_exists(db_, path_, run_id))
      throw Error(run_missing(run_id, path_) + "; cannot " + what);

    Stmt c(db_, path_,
           "INSERT INTO cases (run_id, case_key, scenario, scenario_file, model, model_hash, "
           "precision, batch, fusion, threads, config_json, status, error, max_abs_err, "
           "max_rel_err, cosine, accuracy_passed, accuracy_detail, speedup, build_ms, onnx_nodes, "
           "layer_count, stop_reason, noisy, speedup_ci_low, speedup_ci_high, timer_overhead_ns, load_before, "
           "load_after, other_cpu_ms, timed_wall_ms, cpu_mhz_before, cpu_mhz_after, pinned_cpus, "
           "engine_memory_bytes, reference_memory_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, "
           "?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, "
           "?34, ?35, ?36)");
    c.bind_int(1, run_id);
    c.bind_text(2, spec.case_key());
    c.bind_text(3, spec.scenario);
    c.bind_text(4, spec.scenario_file);
    c.bind_text(5, spec.model);
    c.bind_text(6, spec.model_hash);
    c.bind_text(7, spec.precision);
    c.bind_int(8, spec.batch);
    c.bind_text(9, spec.fusion);
    c.bind_int(10, spec.threads);
    c.bind_text(11, dump_json(spec.to_json()));
    c.bind_text(12, r.status);
    c.bind_text(13, r.error);
    c.bind_real(14, r.accuracy.max_abs_err);
    c.bind_real(15, r.accuracy.max_rel_err);
    c.bind_real(16, r.accuracy.cosine);
    c.bind_bool(17, r.accuracy.passed);
    c.bind_text(18, r.accuracy.detail);
    c.bind_real(19, r.speedup);
    c.bind_real(20, r.build_ms);
    c.bind_int(21, r.onnx_nodes);
    c.bind_int(22, static_cast<int64_t>(r.layers.size()));
    c.bind_text(23, r.stop_reason);
    c.bind_bool(24, r.noisy);
    c.bind_real(25, r.speedup_ci_low);
    c.bind_real(26, r.speedup_ci_high);
    c.bind_real(27, r.timer_overhead_ns);
    const Interference& in = r.interference;
    c.bind_real(28, in.load_before);
    c.bind_real(29, in.load_after);
    c.bind_real(30, in.other_cpu_ms);
    c.bind_real(31, in.timed_wall_ms);
    c.bind_real(32, in.cpu_mhz_before);
    c.bind_real(33, in.cpu_mhz_after);
    c.bind_text(34, r.pinned_cpus);
    c.bind_int(35, r.engine_memory_bytes);
    c.bind_int(36, r.reference_memory_bytes);
    c.run(what);
    const int64_t case_id = sqlite3_last_insert_rowid(db_);

    Stmt m(db_, path_,
           "INSERT INTO measurements (case_id, executor, n, median_ms, p90_ms, p99_ms, mean_ms, "
           "stddev_ms, min_ms, max_ms, ci_low_ms, ci_high_ms, items_per_s, first_iteration_ms, p95_ms, cv, "
           "boot_ci_low_ms, boot_ci_high_ms, outliers_low, outliers_high, minor_faults_min, minor_faults_max, "
           "minor_faults_mean, major_faults_min, major_faults_max, major_faults_mean) "
           "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, "
           "?21, ?22, ?23, ?24, ?25, ?26)");
    Stmt smp(db_, path_, "INSERT INTO samples (measurement_id, iteration, ms) VALUES (?1, ?2, ?3)");
    // The executor column names the CaseResult member, so loading puts each back in place.
    for (auto [executor, meas] : {std::pair<const char*, const Measurement*>{"engine", &r.engine},
                                  {"reference", &r.reference}}) {
      const SampleStats& st = meas->stats;
      m.bind_int(1, case_id);
      m.bind_text(2, executor);
      m.bind_int(3, static_cast<int64_t>(st.n));
      m.bind_real(4, st.median);
      m.bind_real(5, st.p90);
      m.bind_real(6, st.p99);
      m.bind_real(7, st.mean);
      m.bind_real(8, st.stddev);
      m.bind_real(9, st.min);
      m.bind_real(10, st.max);
      m.bind_real(11, st.ci_low);
      m.bind_real(12, st.ci_high);
      m.bind_real(13, meas->items_per_s);
      m.bind_real(14, meas->first_iteration_ms);
      m.bind_real(15, st.p95);
      m.bind_real(16, st.cv);
      m.bind_real(17, st.boot_ci_low);
      m.bind_real(18, st.boot_ci_high);
      m.bind_int(19, st.outliers_low);
      m.bind_int(20, st.outliers_high);
      m.bind_int(21, meas->minor_faults.min);
      m.bind_int(22, meas->minor_faults.max);
      m.bind_real(23, meas->minor_faults.mean);
      m.bind_int(24, meas->major_faults.min);
      m.bind_int(25, meas->major_faults.max);
      m.bind_real(26, meas->major_faults.mean);
      m.run(what + " (" + executor + " measurement)");
      const int64_t measurement_id = sqlite3_last_insert_rowid(db_);
      for (size_t i = 0; i < meas->samples_ms.size(); ++i) {
        smp.bind_int(1, measurement_id);
        smp.bind_int(2, static_cast<int64_t>(i));
        smp.bind_real(3, meas->samples_ms[i]);
        smp.run(what + " (" + executor + " sample " + std::to_string(i) + ")");
      }
    }

    if (!r.build_log.empty()) {
      Stmt b(db_, path_, "INSERT INTO build_logs (case_id, text) VALUES (?1, ?2)");
      b.bind_int(1, case_id);
      b.bind_text(2, r.build_log);
      b.run(what + " (build log)");
    }

    Stmt l(db_, path_,
           "INSERT INTO layers (case_id, layer_index, name, kind, sources_json) "
           "VALUES (?1, ?2, ?3, ?4, ?5)");
    for (const LayerRecord& layer : r.layers) {
      l.bind_int(1, case_id);
      l.bind_int(2, layer.index);
      l.bind_text(3, layer.name);
      l.bind_text(4, layer.kind);
      l.bind_text(5, dump_json(layer.sources));
      l.run(what + " (layer " + std::to_string(layer.index) + " '" + layer.name + "')");
    }

    exec(db_, path_, "COMMIT", what);
  } catch (const Error&) {
    rollback_quietly(db_);
    throw;
  } catch (const std::exception& e) {
    rollback_quietly(db_);
    throw Error(path_ + ": cannot " + what + ": " + e.what());
  }
}

// ---------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------

std::vector<StoredRun> ResultStore::list_runs() const {
  Stmt s(db(), path_,
         (std::string("SELECT ") + kRunColumns + " FROM runs r ORDER BY r.started_at, r.id").c_str());
  std::vector<StoredRun> runs;
  while (s.step("list the runs")) runs.push_back(read_run_row(s, path_));
  return runs;
}

std::optional<int64_t> ResultStore::latest_run() const {
  Stmt s(db(), path_, "SELECT id FROM runs ORDER BY started_at DESC, id DESC LIMIT 1");
  if (!s.step("find the latest run")) return std::nullopt;
  return s.int_at(0);
}

StoredRun ResultStore::load_run(int64_t run_id) const {
  Stmt s(db(), path_, (std::string("SELECT ") + kRunColumns + " FROM runs r WHERE r.id = ?1").c_str());
  s.bind_int(1, run_id);
  if (!s.step("load run " + std::to_string(run_id))) throw Error(run_missing(run_id, path_));
  return read_run_row(s, path_);
}

std::vector<StoredCase> ResultStore::load_cases(int64_t run_id, CaseDetail detail) const {
  ReadSnapshot snapshot(db(), path_);
  if (!run_exists(db_, path_, run_id)) throw Error(run_missing(run_id, path_));
  const std::string doing = "load the cases of run " + std::to_string(run_id);

  Stmt c(db_, path_,
         "SELECT id, scenario, scenario_file, model, model_hash, precision, batch, fusion, "
         "threads, config_json, status, error, max_abs_err, max_rel_err, cosine, "
         "accuracy_passed, accuracy_detail, speedup, build_ms, onnx_nodes, stop_reason, noisy, "
         "speedup_ci_low, speedup_ci_high, timer_overhead_ns, load_before, load_after, other_cpu_ms, "
         "timed_wall_ms, cpu_mhz_before, cpu_mhz_after, pinned_cpus, engine_memory_bytes, reference_memory_bytes "
         "FROM cases WHERE run_id = ?1 ORDER BY id");
  Stmt m(db_, path_,
         "SELECT id, executor, n, median_ms, p90_ms, p99_ms, mean_ms, stddev_ms, min_ms, max_ms, "
         "ci_low_ms, ci_high_ms, items_per_s, first_iteration_ms, p95_ms, cv, boot_ci_low_ms, "
         "boot_ci_high_ms, outliers_low, outliers_high, minor_faults_min, minor_faults_max, "
         "minor_faults_mean, major_faults_min, major_faults_max, major_faults_mean "
         "FROM measurements WHERE case_id = ?1 ORDER BY id");
  Stmt smp(db_, path_, "SELECT ms FROM samples WHERE measurement_id = ?1 ORDER BY iteration");
  Stmt b(db_, path_, "SELECT text FROM build_logs WHERE case_id = ?1");
  Stmt l(db_, path_,
         "SELECT layer_index, name, kind, sources_json FROM layers WHERE case_id = ?1 "
         "ORDER BY layer_index");

  std::vector<StoredCase> out;
  c.bind_int(1, run_id);
  while (c.step(doing)) {
    StoredCase sc;
    sc.id = c.int_at(0);
    sc.run_id = run_id;
    const std::string where = "case " + std::to_string(sc.id);
    CaseResult& r = sc.result;

    // The exact configuration comes from config_json; the columns, which queries use,
    // are authoritative for the fields they hold.
    try {
      r.spec = CaseSpec::from_json(parse_json(c.text_at(9), path_, "config_json of " + where));
    } catch (const Error& e) {
      throw Error(path_ + ": " + where + ": " + e.what());
    }
    r.spec.scenario = c.text_at(1);
    r.spec.scenario_file = c.text_at(2);
    r.spec.model = c.text_at(3);
    r.spec.model_hash = c.text_at(4);
    r.spec.precision = c.text_at(5);
    r.spec.batch = c.int_at(6);
    r.spec.fusion = c.text_at(7);
    r.spec.threads = static_cast<int>(c.int_at(8));
    r.status = c.text_at(10);
    r.error = c.text_at(11);
    r.accuracy.max_abs_err = c.real_at(12);
    r.accuracy.max_rel_err = c.real_at(13);
    r.accuracy.cosine = c.real_at(14);
    r.accuracy.passed = c.int_at(15) != 0;
    r.accuracy.detail = c.text_at(16);
    r.speedup = c.real_at(17);
    r.build_ms = c.real_at(18);
    r.onnx_nodes = static_cast<int>(c.int_at(19));
    r.stop_reason = c.text_at(20);
    r.noisy = c.int_at(21) != 0;
    r.speedup_ci_low = c.real_at(22);
    r.speedup_ci_high = c.real_at(23);
    r.timer_overhead_ns = c.real_at(24);
    r.interference.load_before = c.real_at(25);
    r.interference.load_after = c.real_at(26);
    r.interference.other_cpu_ms = c.real_at(27);
    r.interference.timed_wall_ms = c.real_at(28);
    r.interference.cpu_mhz_before = c.real_at(29);
    r.interference.cpu_mhz_after = c.real_at(30);
    r.pinned_cpus = c.text_at(31);
    r.engine_memory_bytes = c.int_at(32);
    r.reference_memory_bytes = c.int_at(33);

    m.bind_int(1, sc.id);
    while (m.step(doing)) {
      std::string executor = m.text_at(1);
      Measurement* meas = executor == "engine"      ? &r.engine
                          : executor == "reference" ? &r.reference
                                                    : nullptr;
      if (!meas) continue;  // an executor this build does not know: not part of CaseResult
      meas->executor = executor;
      SampleStats& st = meas->stats;
      st.n = static_cast<size_t>(m.int_at(2));
      st.median = m.real_at(3);
      st.p90 = m.real_at(4);
      st.p99 = m.real_at(5);
      st.mean = m.real_at(6);
      st.stddev = m.real_at(7);
      st.min = m.real_at(8);
      st.max = m.real_at(9);
      st.ci_low = m.real_at(10);
      st.ci_high = m.real_at(11);
      meas->items_per_s = m.real_at(12);
      meas->first_iteration_ms = m.real_at(13);
      st.p95 = m.real_at(14);
      st.cv = m.real_at(15);
      st.boot_ci_low = m.real_at(16);
      st.boot_ci_high = m.real_at(17);
      st.outliers_low = static_cast<int>(m.int_at(18));
      st.outliers_high = static_cast<int>(m.int_at(19));
      meas->minor_faults = {m.int_at(20), m.int_at(21), m.real_at(22)};
      meas->major_faults = {m.int_at(23), m.int_at(24), m.real_at(25)};
      if (detail == CaseDetail::kSummary) continue;
      smp.bind_int(1, m.int_at(0));
      while (smp.step(doing)) meas->samples_ms.push_back(smp.real_at(0));
      smp.reset();
    }
    m.reset();
    if (detail == CaseDetail::kSummary) {
      out.push_back(std::move(sc));
      continue;
    }

    b.bind_int(1, sc.id);
    if (b.step(doing)) r.build_log = b.text_at(0);
    b.reset();

    l.bind_int(1, sc.id);
    while (l.step(doing)) {
      LayerRecord layer;
      layer.index = static_cast<int>(l.int_at(0));
      layer.name = l.text_at(1);
      layer.kind = l.text_at(2);
      json sources = parse_json(l.text_at(3), path_,
                                "sources_json of layer " + std::to_string(layer.index) + " of " + where);
      if (!sources.is_array())
        throw Error(path_ + ": sources_json of layer " + std::to_string(layer.index) + " of " +
                    where + " is not a JSON array");
      for (const json& s : sources) {
        if (!s.is_string())
          throw Error(path_ + ": sources_json of layer " + std::to_string(layer.index) + " of " +
                      where + " holds a non-string");
        layer.sources.push_back(s.get<std::string>());
      }
      r.layers.push_back(std::move(layer));
    }
    l.reset();

    out.push_back(std::move(sc));
  }
  return out;
}

}  // namespace fb
