// The SQLite result store: every run, case, sample, layer map and build log, kept so that
// every stored figure can be traced to its samples, its environment and its configuration.
// One file (results.db), WAL mode so a report can read while a run writes; each case is
// written in its own transaction, so an interrupted run never leaves half a case behind.
// The parts live in harness/store/: schema.cpp (tables, migrations, opening), columns.cpp
// (which field each column holds), store_writer.cpp and store_reader.cpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/runtime/profiler.h"
#include "harness/cases/case.h"
#include "harness/measure/environment.h"
#include "harness/store/schema.h"

struct sqlite3;

namespace fb {

struct StoredRun {
  int64_t id = 0;
  RunInfo info;
  std::string finished_at;  // "" while the run is going on, or when it was interrupted
  int case_count = 0;
};

// An engine profile as `fusebench profile --db` stores it.
struct StoredProfile {
  std::string model, model_hash;
  std::string config_json;  // BuildConfig JSON, + "plugins" (older: limits with "exclude_ops")
  Profile profile;
  MachinePeaks peaks;
  int64_t id = 0;                      // set when read back
  std::string created_at{}, git_commit{};  // set when read back (written from the clock and the build)
};

struct StoredCase {
  int64_t id = 0;
  int64_t run_id = 0;
  CaseResult result;  // fully rehydrated, samples included
};

// One case's summary figures in a run, read from their columns alone (no configuration
// JSON, samples or layers): what trends over hundreds of runs need (the report's history,
// compare's recent values). NaN where the store holds none.
struct CaseFigures {
  struct Interval {
    double median = 0, low = 0, high = 0;
  };
  std::string case_key;  // CaseSpec::case_key()
  CaseStatus status = CaseStatus::kPassed;
  bool noisy = false;
  Interval engine, reference, speedup;  // ms, ms, ratio
};
CaseFigures figures_of(const CaseResult& r);

// How much of a case load_cases reads: everything; the timing (samples, but no build log,
// layer map or plugin cost), what compare's history and `history` judge; or the summary
// figures only (no samples either) for commands that read many runs (export).
enum class CaseDetail { kAll, kTiming, kSummary };

class ResultStore {
 public:
  // The newest schema this build reads and writes; see the migrations in store/schema.cpp.
  static constexpr int kSchemaVersion = store::kSchemaVersion;

  enum class Mode {
    kReadWrite,  // creates the file if missing and applies pending migrations
    kReadOnly,   // an existing store of exactly this schema version, never modified (merge's shards)
    kExisting,   // an existing fusebench store, upgraded if older; never created, and a file that is
                 // not one (empty, another program's database) is refused untouched
  };

  // Opens the database. Throws fb::Error naming the path when it is not a SQLite database,
  // not a fusebench one, from a newer fusebench, locked by another process, or cannot be
  // opened. A refused file is never modified.
  explicit ResultStore(const std::string& path, Mode mode = Mode::kReadWrite);
  ~ResultStore();
  ResultStore(const ResultStore&) = delete;
  ResultStore& operator=(const ResultStore&) = delete;
  ResultStore(ResultStore&& other) noexcept;
  ResultStore& operator=(ResultStore&& other) noexcept;

  int64_t begin_run(const RunInfo& info);
  // Sets finished_at (default: now).
  void finish_run(int64_t run_id, const std::string& finished_at = "");
  // Stores one case in one transaction (BEGIN IMMEDIATE ... COMMIT): on any error it rolls
  // back, so the case is either there in full or not at all, and throws fb::Error.
  // `replacing`: the id of the record of a lost attempt at the same case (worker_lost),
  // deleted in the same transaction, so a resumed run holds each case once.
  void write_case(int64_t run_id, const CaseResult& r, std::optional<int64_t> replacing = std::nullopt);
  // Records the shard runs a merged run was joined from (RunInfo::merged_from).
  void set_merged_from(int64_t run_id, const nlohmann::json& merged_from);
  // One transaction; returns the profile's id.
  int64_t write_profile(const StoredProfile& p);
  // Machine peaks are measured once per host, CPU model and thread count.
  std::optional<MachinePeaks> cached_peaks(const std::string& host, const std::string& cpu_model, int threads) const;
  void store_peaks(const std::string& host, const std::string& cpu_model, int threads, const MachinePeaks& peaks);

  std::vector<StoredRun> list_runs() const;  // oldest first (by started_at, then id)
  std::optional<int64_t> latest_run() const;  // the most recently started run
  StoredRun load_run(int64_t run_id) const;   // fb::Error if absent
  // Every stored profile without its layers and nodes (profile.layers/nodes empty), oldest first.
  std::vector<StoredProfile> list_profiles() const;
  // One profile in full, its module roll-up recomputed from its nodes; fb::Error if absent.
  StoredProfile load_profile(int64_t profile_id) const;
  // In insertion order.
  std::vector<StoredCase> load_cases(int64_t run_id, CaseDetail detail = CaseDetail::kAll) const;
  // In insertion order; many times faster than load_cases for reading a long history.
  std::vector<CaseFigures> load_case_figures(int64_t run_id) const;

  const std::string& path() const { return path_; }
  int schema_version() const;  // as recorded in the meta table
  // How long a statement waits for another process's lock before failing (default 5000).
  void set_busy_timeout_ms(int ms);

 private:
  sqlite3* db() const;
  void close() noexcept;
  bool run_exists(int64_t run_id) const;
  std::string run_missing(int64_t run_id) const;  // "run N is not in FILE"

  std::string path_;
  sqlite3* db_ = nullptr;
  int busy_timeout_ms_ = 5000;
};

}  // namespace fb
