#include "harness/store/schema.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iterator>
#include <limits>

#include "engine/ir/error.h"
#include "harness/store/sqlite_statement.h"

namespace fb::store {
namespace {

// Each step takes the database from version `to_version - 1` to `to_version`. All pending
// steps are applied together in one transaction, and meta.schema_version is set to the
// last one. Never edit a step that has shipped: append a new one and bump kSchemaVersion.
// A database newer than the last step here is refused.

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

// Version 4: cases from many hosts (MPI ranks, shards) and the whole layer map (issues 15
// and 16). Old rows keep what they had: the host of their run, single-process isolation,
// and NULL (unknown) for layer figures version 3 did not store.
constexpr const char* kSchemaV4 = R"sql(
-- runs: the slice of the cases a `run --shard K/N` ran ('' when it ran all of them).
ALTER TABLE runs ADD COLUMN shard TEXT NOT NULL DEFAULT '';
-- runs made by `fusebench merge`: the shard runs they joined, JSON
-- [{"shard": "1/4", "host": ..., "started_at": ..., "file": ...}], so merging a shard again is harmless.
ALTER TABLE runs ADD COLUMN merged_from_json TEXT NOT NULL DEFAULT '[]';

-- cases: the host that built and timed the case (a distributed run has several), how its
-- timing was kept apart from other work on that host (it changes the numbers), and
-- whether it has no result because its worker died or hung (`run --resume` runs it again).
ALTER TABLE cases ADD COLUMN host TEXT NOT NULL DEFAULT '';
ALTER TABLE cases ADD COLUMN cpu_model TEXT NOT NULL DEFAULT '';
ALTER TABLE cases ADD COLUMN cpu_flags TEXT NOT NULL DEFAULT '';
ALTER TABLE cases ADD COLUMN cores INTEGER NOT NULL DEFAULT 0;
ALTER TABLE cases ADD COLUMN isolation TEXT NOT NULL DEFAULT 'single-process';
ALTER TABLE cases ADD COLUMN worker_lost INTEGER NOT NULL DEFAULT 0 CHECK (worker_lost IN (0, 1));
UPDATE cases SET host = r.host, cpu_model = r.cpu_model, cpu_flags = r.cpu_flags, cores = r.cores
  FROM runs r WHERE r.id = cases.run_id;

-- layers: everything the engine says about a layer: the kernel that runs it, its
-- precision, the shapes it reads and writes, and its work per run (0: not counted).
ALTER TABLE layers ADD COLUMN kernel TEXT NOT NULL DEFAULT '';
ALTER TABLE layers ADD COLUMN precision TEXT NOT NULL DEFAULT '';
ALTER TABLE layers ADD COLUMN input_shapes_json TEXT NOT NULL DEFAULT '[]';   -- [[1,16,64], ...]
ALTER TABLE layers ADD COLUMN output_shapes_json TEXT NOT NULL DEFAULT '[]';
ALTER TABLE layers ADD COLUMN flops REAL;   -- NULL: not stored (before version 4)
ALTER TABLE layers ADD COLUMN bytes REAL;
)sql";

// Version 5: why each layer runs in its precision (issue 12): "default", "constraint
// 'PATTERN'", "fallback from bf16: ...", "view of its input", "precision boundary".
constexpr const char* kSchemaV5 = R"sql(
ALTER TABLE layers ADD COLUMN precision_reason TEXT NOT NULL DEFAULT '';
)sql";

// Version 6: timing in several worker processes (issue 11). Every sample keeps the process
// that took it; each case keeps how it was timed (processes, alternation) and how far its
// figures moved between the processes. Older rows read as one process, no spread known.
constexpr const char* kSchemaV6 = R"sql(
ALTER TABLE samples ADD COLUMN process INTEGER NOT NULL DEFAULT 0;  -- 0-based worker process
ALTER TABLE cases ADD COLUMN processes INTEGER NOT NULL DEFAULT 1;  -- timing.processes
ALTER TABLE cases ADD COLUMN alternation TEXT NOT NULL DEFAULT 'iteration';  -- timing.alternation
-- Relative standard deviation of the per-process medians (engine, reference) and speedups;
-- NULL with one process.
ALTER TABLE cases ADD COLUMN engine_process_spread REAL;
ALTER TABLE cases ADD COLUMN reference_process_spread REAL;
ALTER TABLE cases ADD COLUMN speedup_process_spread REAL;
)sql";

// Version 7: what plugins cost (issue 13): for a case with plugins placed in its model,
// the same case without them, timed interleaved, and the difference split by provenance
// (harness/measure/plugin_cost.h).
constexpr const char* kSchemaV7 = R"sql(
-- plugin_costs: one row per case whose scenario placed plugins (insert_plugins) with
-- plugin_cost on. The parts are per-layer medians of interleaved profiled runs; the
-- difference is end to end.
CREATE TABLE plugin_costs (
  case_id               INTEGER PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,
  with_plugins_ms       REAL NOT NULL,     -- end-to-end median with the plugins
  without_plugins_ms    REAL NOT NULL,     -- and without them, timed interleaved
  difference_ms         REAL NOT NULL,     -- with - without
  difference_ci_low_ms  REAL NOT NULL,     -- its 95% seeded bootstrap interval
  difference_ci_high_ms REAL NOT NULL,
  samples               INTEGER NOT NULL,  -- end-to-end samples per build
  layer_runs            INTEGER NOT NULL,  -- profiled runs per build behind the parts
  stop_reason           TEXT NOT NULL,     -- of the end-to-end timing
  plugin_ms             REAL NOT NULL,     -- (a) the plugins' own layers
  prevented_fusions_ms  REAL NOT NULL,     -- (b) the sum over plugin_cost_groups
  rest_ms               REAL NOT NULL,     -- (c) layers in both builds whose time changed
  unattributed_ms       REAL NOT NULL,     -- difference - (a + b + c)
  within_interval       INTEGER NOT NULL CHECK (within_interval IN (0, 1)),  -- a + b + c inside the interval
  plugin_layers_json    TEXT NOT NULL      -- [{"name", "kind", "ms"}]: the plugins' layers
);
-- plugin_cost_groups: (b) in detail: each group of layers that differs between the builds,
-- named by its fused layer, with the layers before (without the plugins) and after.
CREATE TABLE plugin_cost_groups (
  case_id            INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  rank               INTEGER NOT NULL,     -- 0: the largest delta
  name               TEXT NOT NULL,        -- "fusebench.Attention '/encoder/...' (13 nodes)"
  before_ms          REAL NOT NULL,
  after_ms           REAL NOT NULL,
  delta_ms           REAL NOT NULL,        -- after - before
  before_layers_json TEXT NOT NULL,        -- [{"name", "kind", "ms"}]
  after_layers_json  TEXT NOT NULL,
  PRIMARY KEY (case_id, rank)
) WITHOUT ROWID;
)sql";

// Version 8: dynamic engines (issue 17). Whether the case's engine was built for its one
// batch or for a range (engine_shapes: 'static' or 'dynamic', the range in config_json),
// and what a dynamic engine's first run at a new shape cost (NULL for a static engine).
constexpr const char* kSchemaV8 = R"sql(
ALTER TABLE cases ADD COLUMN engine_shapes TEXT NOT NULL DEFAULT 'static';
ALTER TABLE cases ADD COLUMN specialize_ms REAL;
)sql";

// Version 9: disturbance and paired A/B runs (issue 40). What the machine did to each case's timing besides other
// processes' CPU time: the hypervisor's steal time, the run queue, our involuntary context
// switches; and why the case was flagged disturbed ('' when it was not) after re-timing
// how many of its worker processes.
constexpr const char* kSchemaV9 = R"sql(
ALTER TABLE cases ADD COLUMN steal_ms REAL;
ALTER TABLE cases ADD COLUMN run_queue INTEGER;
ALTER TABLE cases ADD COLUMN involuntary_switches INTEGER;
ALTER TABLE cases ADD COLUMN disturbed TEXT NOT NULL DEFAULT '';
ALTER TABLE cases ADD COLUMN retimed_processes INTEGER NOT NULL DEFAULT 0;
-- paired A/B runs (run --against): the other binary's run, and which binary timed this one
ALTER TABLE runs ADD COLUMN paired_with INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN timed_by TEXT NOT NULL DEFAULT '';
)sql";

// Version 10: the GPU's environment of a device case (issue 41): what the GPU is and how it
// is set up (name, UUID, driver, CUDA/cuBLAS/cuDNN, power limit, ECC, persistence, MIG, max
// clock), its clocks, power, temperature, throttling and other processes read through NVML
// before and after the timed phase, and the warm-up until its clock settled, as JSON
// (harness/cases/gpu_environment.h); '' for CPU cases and older rows.
constexpr const char* kSchemaV10 = R"sql(
ALTER TABLE cases ADD COLUMN gpu_json TEXT NOT NULL DEFAULT '';
)sql";

// Version 11: what `fusebench explain` reads (issue 43): each case's per-layer profile
// (scenario "profile"), one profiled pass after its timing, and the build's fusion
// decisions, which the build log holds only as text. Older cases have neither.
constexpr const char* kSchemaV11 = R"sql(
-- case_profiles: a case's profile: how many profiled runs, the sum of layer medians, and
-- what it cost the run (the unfused build that apportions fused layers, and all the runs).
CREATE TABLE case_profiles (
  case_id    INTEGER PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,
  iterations INTEGER NOT NULL,
  total_ms   REAL NOT NULL,
  wall_ms    REAL NOT NULL
);
-- case_profile_layers: each engine layer's median over the profiled runs and its time in
-- each of them (JSON list, run order: run k of every layer is one engine run). The layer's
-- name, kind, kernel and sources are its row in layers (the same build, the same index).
CREATE TABLE case_profile_layers (
  case_id      INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  layer_index  INTEGER NOT NULL,
  median_ms    REAL NOT NULL,
  samples_json TEXT NOT NULL,
  PRIMARY KEY (case_id, layer_index)
) WITHOUT ROWID;
-- case_profile_nodes: time per source ONNX node; estimated = apportioned from a fused layer.
CREATE TABLE case_profile_nodes (
  case_id     INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  node        TEXT NOT NULL,
  module      TEXT NOT NULL,
  layer_index INTEGER NOT NULL,
  ms          REAL NOT NULL,
  estimated   INTEGER NOT NULL CHECK (estimated IN (0, 1))
);
CREATE INDEX case_profile_nodes_case ON case_profile_nodes(case_id);
-- fusion_decisions: every fusion and refusal of a case's build, in the order made.
CREATE TABLE fusion_decisions (
  case_id    INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  seq        INTEGER NOT NULL,
  pass       TEXT NOT NULL,             -- "attention-fusion"
  root       TEXT NOT NULL,             -- the node the rule matched at
  nodes_json TEXT NOT NULL,             -- JSON list of the matched nodes
  fused      TEXT NOT NULL,             -- the node that replaced them ('' when refused)
  refused    TEXT NOT NULL,             -- why it was refused ('' when fused)
  PRIMARY KEY (case_id, seq)
) WITHOUT ROWID;
)sql";

// Version 12: load cases (issue 45): each run of a pool (a server peak search's every
// step) with its figures, and every sample's issue, start and end times.
constexpr const char* kSchemaV12 = R"sql(
-- load_steps: a load case's runs, in the order run (one, or a peak search's steps), with
-- their figures (harness/load/load_figures.h); times in ms unless the column says otherwise.
CREATE TABLE load_steps (
  case_id          INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  step             INTEGER NOT NULL,
  scenario         TEXT NOT NULL,     -- single-stream, multi-stream, server, offline
  target_qps       REAL NOT NULL,     -- server: the arrival rate asked for (0 otherwise)
  latency_bound_ms REAL NOT NULL,
  percentile       REAL NOT NULL,     -- the one claimed (0.99 = p99)
  instances        INTEGER NOT NULL,
  threads          INTEGER NOT NULL,  -- per instance
  queries          INTEGER NOT NULL,
  samples          INTEGER NOT NULL,
  served           INTEGER NOT NULL,
  duration_ms      REAL NOT NULL,     -- LoadGen's: last scheduled arrival, last issue, or last completion (offline)
  qps              REAL NOT NULL,     -- queries completed per second
  samples_per_s    REAL NOT NULL,
  p50_ms REAL, p90_ms REAL, p99_ms REAL, mean_ms REAL, max_ms REAL,
  percentile_ms    REAL,              -- the claimed percentile's plain value
  claimed_ms       REAL,              -- early stopping's estimate of it; NULL: too few queries
  claim_discarded  INTEGER NOT NULL,
  claim_needed     INTEGER NOT NULL,
  over_bound       INTEGER NOT NULL,  -- server: queries over the latency bound
  needed_queries   INTEGER NOT NULL,  -- server: what early stopping needs with that many over
  dispatch_p50_us  REAL,              -- start minus issue of queries that found their instance idle
  dispatch_p99_us  REAL,
  overhead_ns      REAL NOT NULL,     -- the issue/serve loop's own cost per query
  valid            INTEGER NOT NULL CHECK (valid IN (0, 1)),
  invalid          TEXT NOT NULL,     -- why not ('' when valid)
  PRIMARY KEY (case_id, step)
) WITHOUT ROWID;
-- load_samples: every sample of every load step: its query, the instance that served it,
-- and its times in ns from the step's first issue (start and end -1: never served).
CREATE TABLE load_samples (
  case_id  INTEGER NOT NULL REFERENCES cases(id) ON DELETE CASCADE,
  step     INTEGER NOT NULL,
  sample   INTEGER NOT NULL,
  query    INTEGER NOT NULL,
  instance INTEGER NOT NULL,
  issue_ns INTEGER NOT NULL,
  start_ns INTEGER NOT NULL,
  end_ns   INTEGER NOT NULL,
  queued   INTEGER NOT NULL CHECK (queued IN (0, 1)),  -- its instance was busy when it was issued
  PRIMARY KEY (case_id, step, sample)
) WITHOUT ROWID;
-- load_results: a load case's peak valid rate (a server peak search's; NULL: none valid or no search).
CREATE TABLE load_results (
  case_id  INTEGER PRIMARY KEY REFERENCES cases(id) ON DELETE CASCADE,
  peak_qps REAL
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
    {4, "host and isolation per case, shards, the whole layer map", kSchemaV4},
    {5, "why each layer runs in its precision", kSchemaV5},
    {6, "worker processes: sample process, process spread per case", kSchemaV6},
    {7, "plugin cost splits", kSchemaV7},
    {8, "static or dynamic engine, a dynamic engine's specialization time", kSchemaV8},
    {9, "disturbance (steal time, run queue, preemptions, the disturbed flag), paired A/B runs", kSchemaV9},
    {10, "a GPU case's device environment (NVML readings around the timing)", kSchemaV10},
    {11, "per-case layer profiles and fusion decisions", kSchemaV11},
    {12, "load cases: their runs' figures and every sample's times", kSchemaV12},
};
static_assert(kMigrations[std::size(kMigrations) - 1].to_version == kSchemaVersion,
              "the last migration must bring the schema to kSchemaVersion");

sqlite3* open_file(const std::string& path, int flags, int busy_timeout_ms) {
  if (path.empty()) throw Error("the result database path is empty");
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, flags, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_close_v2(db);
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path parent = fs::absolute(path, ec).parent_path();
    if (fs::is_directory(path, ec)) throw Error("cannot open " + path + ": it is a folder, not a database file");
    if (!parent.empty() && !fs::is_directory(parent, ec))
      throw Error("cannot open " + path + ": its folder " + parent.string() + " does not exist");
    throw_db_error(nullptr, path, rc, "open it");
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return db;
}

// Closes the handle unless the body succeeded.
template <class Body>
sqlite3* closing_on_failure(sqlite3* db, Body body) {
  try {
    body();
  } catch (...) {
    rollback_quietly(db);
    sqlite3_close_v2(db);
    throw;
  }
  return db;
}

}  // namespace

int read_schema_version(sqlite3* db, const std::string& path) {
  // Reading the schema is also where a file that is not a database at all shows itself
  // (SQLITE_NOTADB), before anything has been written to it.
  bool has_meta = false;
  int other_tables = 0;
  {
    Statement s(db, path, "SELECT name FROM sqlite_master WHERE type = 'table'");
    while (s.step("read the database schema")) {
      std::string name = s.text("name");
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
  Statement s(db, path, "SELECT value, typeof(value) AS type FROM meta WHERE key = 'schema_version'");
  if (!s.step("read the schema version"))
    throw Error(path + " is not a fusebench result store (its meta table has no schema_version)");
  int64_t v = -1;
  const std::string type = s.text("type"), text = s.text("value");
  if (type == "integer") {
    v = s.integer("value");
  } else if (type == "text") {
    try {
      size_t used = 0;
      v = std::stoll(text, &used);
      if (used != text.size()) v = -1;
    } catch (const std::exception&) {
      v = -1;
    }
  }
  if (v < 0 || v > std::numeric_limits<int>::max())
    throw Error(path + " has an unreadable schema version '" + text + "' in its meta table; is it a fusebench result store?");
  return static_cast<int>(v);
}

namespace {

// Why a store cannot be written here ("" when it can): SQLite opens a read-only file
// read-only without a word, and a WAL database needs its folder writable for the -wal and
// -shm files (otherwise the first read fails as "unable to open database file").
std::string why_not_writable(sqlite3* db, const std::string& path) {
  if (sqlite3_db_readonly(db, "main") == 1) return "the file or its file system cannot be written";
  std::error_code ec;
  const std::filesystem::path folder = std::filesystem::absolute(path, ec).parent_path();
  if (!std::filesystem::exists(path + "-wal", ec) && access(folder.c_str(), W_OK) != 0)
    return "its folder " + folder.string() + " cannot be written: " + std::strerror(errno);
  return "";
}

}  // namespace

sqlite3* open_and_migrate(const std::string& path, int busy_timeout_ms) {
  sqlite3* db = open_file(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, busy_timeout_ms);
  return closing_on_failure(db, [&] {
    if (const std::string why = why_not_writable(db, path); !why.empty())
      throw Error(path + " is read-only (" + why + "); fusebench writes to a results database and beside it");
    // Look before touching: every refusal below leaves the file as it was.
    int version = read_schema_version(db, path);
    if (version > kSchemaVersion)
      throw Error(path + " has schema version " + std::to_string(version) + "; this fusebench understands up to " +
                  std::to_string(kSchemaVersion) + " — upgrade fusebench");

    exec(db, path, "PRAGMA foreign_keys = ON", "enable foreign keys");
    {
      // WAL: readers (report, compare) never block the writer, nor the writer them.
      Statement wal(db, path, "PRAGMA journal_mode = WAL");
      while (wal.step("switch to WAL journaling")) {
      }
    }
    exec(db, path, "PRAGMA synchronous = NORMAL", "set synchronous = NORMAL");

    if (version == kSchemaVersion) return;
    Transaction upgrade(db, path, "create or upgrade the schema");
    version = read_schema_version(db, path);  // another process may have just migrated it
    for (const Migration& m : kMigrations) {
      if (m.to_version <= version) continue;
      exec(db, path, m.sql, "upgrade the schema to version " + std::to_string(m.to_version) + " (" + m.what + ")");
    }
    Statement set(db, path,
                  "INSERT INTO meta (key, value) VALUES ('schema_version', :version) "
                  "ON CONFLICT (key) DO UPDATE SET value = excluded.value");
    set.bind(":version", kSchemaVersion);
    set.run("record the schema version");
    upgrade.commit();
  });
}

sqlite3* open_read_only(const std::string& path, int busy_timeout_ms) {
  if (!std::filesystem::exists(path)) throw Error(path + ": no such results database");
  sqlite3* db = open_file(path, SQLITE_OPEN_READONLY, busy_timeout_ms);
  return closing_on_failure(db, [&] {
    if (read_schema_version(db, path) == 0) throw Error(path + " is an empty database, not a fusebench result store");
  });
}

}  // namespace fb::store
