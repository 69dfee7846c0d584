// `fusebench run` without its command line: choose the cases (scenarios, --shard,
// --resume), start or continue the run in the store, and store each result as it arrives,
// whoever produced it: this process (run_in_process) or an MPI rank (harness/run/mpi_run.h).
#pragma once
#include <cstdint>
#include <iosfwd>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/cases/case.h"
#include "harness/cases/scenario.h"
#include "harness/store/result_store.h"

namespace fb {

// "fusebench 0.1.0 (commit)" as another fusebench executable says it; an Error naming it
// and `option` when it cannot be run or is no fusebench.
std::string fusebench_version_of(const std::string& path, const std::string& option);

// Shard K of N (1-based), as `--shard K/N` names it.
struct Shard {
  int index = 1;
  int count = 1;
  std::string text() const { return std::to_string(index) + "/" + std::to_string(count); }
};
// "2/4" -> {2, 4}; fb::Error naming the option otherwise.
Shard parse_shard(const std::string& text);

// The place of a case in its scenario's matrix, which --resume and --shard identify it by:
// its scenario, model and the settings of its case key (the case key itself needs the
// model's hash, known only once a worker has loaded the model).
std::string matrix_identity(const CaseSpec& s);

// The cases shard K of N runs: sorted by matrix identity, every N-th from the K-th, so the
// slice depends neither on the order of the scenario files nor on the host.
std::vector<CaseSpec> shard_cases(std::vector<CaseSpec> cases, const Shard& shard);

struct RunRequest {
  std::vector<std::string> scenario_files;
  std::string db_path;
  bool resume = false;         // continue the latest unfinished run of the same scenarios and shard
  std::optional<Shard> shard;  // run only this slice of the cases
  std::string command;         // the command line, stored with the run
  std::vector<std::string> plugin_libraries;  // --plugin: absolute paths, loaded for every case
  // Under mpirun --cores-per-worker K: a case may use at most K threads (0: no limit).
  // Checked with the scenarios, before a run is begun in the database.
  int max_threads = 0;
  // A paired A/B run: the other fusebench executable (the baseline side), whose worker
  // processes alternate with this one's (CaseRunner::run_paired). Two runs are stored.
  std::string against;
  // Test hooks for A/B experiments: the candidate's engine busy-waits this long, or this
  // fraction of its own time, before each run (timing.inject_delay_us, inject_slowdown),
  // the baseline side never. nullopt: the scenario's own.
  std::optional<double> inject_delay_us, inject_slowdown;
};

struct PendingCase {
  CaseSpec spec;
  std::optional<int64_t> replacing;  // the stored record of a lost attempt at this case (--resume)
};

// One run from start to end. Only the process that owns it writes the database.
class RunSession {
 public:
  // Validates every scenario file before anything runs, then opens the store (not before: a
  // refused scenario leaves no database behind) and starts a new run or continues the one
  // --resume finds. Throws fb::Error naming the file and field.
  RunSession(const RunRequest& request, std::ostream& out);

  std::vector<PendingCase>& pending() { return pending_; }
  ResultStore& store() { return store_; }
  int64_t run_id() const { return run_id_; }
  const std::string& against() const { return against_; }
  int64_t baseline_run_id() const { return baseline_run_id_; }  // --against: the other side's run (else 0)
  const std::string& db_path() const { return db_path_; }

  // Longest first, by how long each case took in the latest earlier run that has it (build
  // plus timed phase); cases never run before go first, as their length is unknown.
  void order_longest_first();

  // Stores one result in its own transaction (an interrupted run keeps every case stored
  // before) and prints its line. `pending_index` indexes pending().
  void store_result(size_t pending_index, const CaseResult& r);
  // A paired A/B case: the candidate into this run, the baseline side into its paired run.
  void store_pair(size_t pending_index, const CaseResult& candidate, const CaseResult& baseline);
  void print_progress(size_t pending_index, const std::string& message) const;  // a live status line on a terminal

  // Marks the run finished, unless a case was lost with its worker: then it stays
  // unfinished, so that `run --resume` finds it and runs those cases again.
  void finish();
  // The closing lines; returns the exit code: 2 with errors, 1 with failed cases, else 0.
  int summarize(const std::string& report_path) const;

 private:
  struct CheckedRun {
    std::vector<Scenario> scenarios;
    std::set<std::string> names;
    std::vector<CaseSpec> cases;  // this shard's
    size_t all_cases = 0;         // of every shard
  };
  static CheckedRun check(const RunRequest& request);
  RunSession(const RunRequest& request, std::ostream& out, CheckedRun checked);

  std::ostream& out_;
  std::string db_path_;
  ResultStore store_;
  int64_t run_id_ = 0;
  int64_t baseline_run_id_ = 0;  // --against: the other binary's run
  std::string against_;
  std::vector<PendingCase> pending_;
  size_t stored_before_ = 0;  // cases the resumed run already held
  size_t stored_ = 0, failed_ = 0, errors_ = 0, lost_ = 0, noisy_ = 0, disturbed_ = 0;
  void print_build_warnings(const CaseResult& r);
  std::set<std::string> warned_;  // build warnings already shown in this run
  std::map<std::string, int> gate_counts_;  // "pass", "FAIL", "INCONCLUSIVE": the rules run can judge alone
  bool tty_ = false;
};

// Runs every pending case in this process, one after another, storing each as it finishes.
void run_in_process(RunSession& session);

}  // namespace fb
