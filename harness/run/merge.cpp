#include "harness/run/merge.h"

#include <filesystem>
#include <map>
#include <ostream>
#include <set>

#include "engine/ir/error.h"
#include "harness/run/run_loop.h"
#include "harness/store/result_store.h"

namespace fb {
namespace {

struct ShardRun {
  std::string path;
  StoredRun run;
  Shard shard;
  nlohmann::json entry;  // how the merged run's merged_from names it
};

std::string names_of(const nlohmann::json& scenarios) {
  std::set<std::string> names;
  for (const auto& s : scenarios)
    if (s.is_object() && s.contains("name") && s["name"].is_string()) names.insert(s["name"].get<std::string>());
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return "{" + out + "}";
}

std::string commit_of(const RunInfo& i) { return i.git_commit + (i.git_dirty ? " (dirty)" : ""); }

ShardRun read_shard(const std::string& path) {
  ResultStore store(path, ResultStore::Mode::kReadOnly);  // names the file on a schema mismatch
  std::optional<int64_t> latest = store.latest_run();
  if (!latest) throw Error(path + ": holds no runs, so it is not a shard to merge");
  ShardRun s{path, store.load_run(*latest), {}, {}};
  if (s.run.info.shard.empty())
    throw Error(path + ": run " + std::to_string(s.run.id) + " was not run with --shard K/N; merge joins shards");
  s.shard = parse_shard(s.run.info.shard);
  if (s.run.finished_at.empty())
    throw Error(path + ": run " + std::to_string(s.run.id) + " (shard " + s.run.info.shard +
                ") never finished; complete it with `fusebench run --resume --shard " + s.run.info.shard +
                " ...` before merging");
  s.entry = {{"shard", s.run.info.shard},
             {"host", s.run.info.host},
             {"started_at", s.run.info.started_at},
             {"file", std::filesystem::absolute(path).lexically_normal().string()}};
  return s;
}

bool same_run(const nlohmann::json& a, const nlohmann::json& b) {
  return a.value("shard", "") == b.value("shard", "") && a.value("host", "") == b.value("host", "") &&
         a.value("started_at", "") == b.value("started_at", "");
}

// The output run these shards belong to: one made by merge from the same scenarios and
// commit, whose shards are either these very runs or slots not filled yet.
std::optional<int64_t> find_target(const ResultStore& out, const std::vector<ShardRun>& shards) {
  const RunInfo& first = shards.front().run.info;
  const std::vector<StoredRun> runs = out.list_runs();
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    const RunInfo& i = it->info;
    if (!i.merged_from.is_array() || i.merged_from.empty()) continue;
    if (names_of(i.scenarios) != names_of(first.scenarios) || commit_of(i) != commit_of(first)) continue;
    bool fits = true;
    for (const ShardRun& s : shards)
      for (const auto& e : i.merged_from)
        if (e.value("shard", "") == s.run.info.shard && !same_run(e, s.entry)) fits = false;
    if (fits) return it->id;
  }
  return std::nullopt;
}

}  // namespace

MergeSummary merge_shards(const std::vector<std::string>& shard_paths, const std::string& out_path,
                          const std::string& command, std::ostream& log) {
  if (shard_paths.empty()) throw Error("merge: no shard databases given");
  namespace fs = std::filesystem;
  std::vector<ShardRun> shards;
  for (const std::string& path : shard_paths) {
    std::error_code ec;
    if (fs::exists(out_path) && fs::equivalent(path, out_path, ec))
      throw Error(path + ": is also the output (-o); merge writes a separate database");
    ShardRun s = read_shard(path);
    if (!shards.empty()) {
      const ShardRun& f = shards.front();
      if (names_of(s.run.info.scenarios) != names_of(f.run.info.scenarios))
        throw Error(path + ": ran the scenarios " + names_of(s.run.info.scenarios) + ", but " + f.path + " ran " +
                    names_of(f.run.info.scenarios) + "; shards of different scenario sets cannot be merged");
      if (commit_of(s.run.info) != commit_of(f.run.info))
        throw Error(path + ": was made by fusebench " + commit_of(s.run.info) + ", but " + f.path + " by " +
                    commit_of(f.run.info) + "; shards of different fusebench commits cannot be merged");
      if (s.shard.count != f.shard.count)
        throw Error(path + ": is shard " + s.run.info.shard + ", but " + f.path + " is shard " + f.run.info.shard +
                    "; all shards must split the cases the same way (the same N)");
    }
    bool repeated = false;
    for (const ShardRun& earlier : shards) {
      if (earlier.run.info.shard != s.run.info.shard) continue;
      if (!same_run(earlier.entry, s.entry))
        throw Error(path + " and " + earlier.path + " both hold shard " + s.run.info.shard +
                    ", from different runs; merge one of them");
      repeated = true;
    }
    if (repeated) log << path << ": the same shard run as given before; skipped\n";
    else shards.push_back(std::move(s));
  }

  ResultStore out(out_path);
  MergeSummary summary;
  std::optional<int64_t> target = find_target(out, shards);
  if (!target) {
    RunInfo info = shards.front().run.info;
    info.command = command;
    info.shard = "";
    info.merged_from = nlohmann::json::array();  // named in the same write as the run itself: see below
    for (const ShardRun& s : shards) {
      info.started_at = std::min(info.started_at, s.run.info.started_at);
      info.merged_from.push_back(s.entry);
      info.merged_from.back()["complete"] = false;
    }
    target = out.begin_run(info);
  }
  summary.run_id = *target;
  StoredRun merged = out.load_run(*target);
  std::set<std::string> held;
  for (const StoredCase& sc : out.load_cases(*target, CaseDetail::kSummary)) held.insert(matrix_identity(sc.result.spec));

  // Each shard is named in merged_from before its cases are copied, marked incomplete until
  // they all are: a merge killed part way leaves a run the next merge finds and completes
  // (the cases already copied are skipped), never a second run beside it.
  auto entry_of = [&](const ShardRun& s) -> nlohmann::json* {
    for (auto& e : merged.info.merged_from)
      if (same_run(e, s.entry)) return &e;
    return nullptr;
  };
  for (const ShardRun& s : shards)
    if (!entry_of(s)) {
      nlohmann::json e = s.entry;
      e["complete"] = false;
      merged.info.merged_from.push_back(e);
    }
  out.set_merged_from(*target, merged.info.merged_from);

  std::string finished_at = merged.finished_at;
  for (const ShardRun& s : shards) {
    ResultStore in(s.path, ResultStore::Mode::kReadOnly);
    size_t added = 0, dups = 0;
    for (const StoredCase& sc : in.load_cases(s.run.id)) {
      if (!held.insert(matrix_identity(sc.result.spec)).second) {
        ++dups;
        continue;
      }
      out.write_case(*target, sc.result);  // one transaction per case, as a run stores them
      ++added;
    }
    if (nlohmann::json* e = entry_of(s); e->value("complete", true) == false) {
      e->erase("complete");
      out.set_merged_from(*target, merged.info.merged_from);
    }
    finished_at = std::max(finished_at, s.run.finished_at);
    summary.added += added;
    summary.duplicates += dups;
    log << s.path << ": shard " << s.run.info.shard << ", " << added << " cases added"
        << (dups ? ", " + std::to_string(dups) + " already there" : "") << "\n";
  }

  std::set<std::string> present;
  for (const auto& e : merged.info.merged_from)
    if (e.value("complete", true)) present.insert(e.value("shard", ""));
  const int n = shards.front().shard.count;
  for (int k = 1; k <= n; ++k)
    if (!present.count(Shard{k, n}.text())) summary.missing_shards.push_back(Shard{k, n}.text());
  if (summary.missing_shards.empty()) out.finish_run(*target, finished_at);
  return summary;
}

}  // namespace fb
