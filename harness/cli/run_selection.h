// How the commands that read a results database name it and its runs: --db must exist
// (reading never creates an empty database by mistake), --run defaults to the latest run,
// and a baseline defaults to the run before.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

#include "engine/ir/error.h"
#include "harness/store/result_store.h"

namespace fb::cli {

inline ResultStore open_existing_store(const std::string& path, const char* option = "--db") {
  if (path.empty()) throw Error(std::string(option) + " FILE is required");
  if (!std::filesystem::exists(path)) throw Error(path + ": no such results database (" + option + ")");
  return ResultStore(path, ResultStore::Mode::kExisting);
}

// The run asked for, or the latest one; fb::Error naming the file when there is none.
inline int64_t pick_run(const ResultStore& store, std::optional<int64_t> run) {
  if (run) {
    store.load_run(*run);  // throws "run N is not in FILE"
    return *run;
  }
  std::optional<int64_t> latest = store.latest_run();
  if (!latest) throw Error(store.path() + ": holds no runs");
  return *latest;
}

// The run started just before `run` (list_runs order), if any.
inline std::optional<int64_t> run_before(const ResultStore& store, int64_t run) {
  std::optional<int64_t> previous;
  for (const StoredRun& r : store.list_runs()) {
    if (r.id == run) return previous;
    previous = r.id;
  }
  return std::nullopt;
}

// The baseline of `run` when none is named: its paired A/B run's other side, else the run
// before it; fb::Error naming the file when there is none.
inline int64_t default_baseline(const ResultStore& store, int64_t run) {
  if (const int64_t other_side = store.load_run(run).info.paired_with) return other_side;
  const std::optional<int64_t> before = run_before(store, run);
  if (!before)
    throw Error(store.path() + ": run " + std::to_string(run) + " has no run before it to compare with; "
                "give --baseline RUN or --baseline-db FILE");
  return *before;
}

}  // namespace fb::cli
