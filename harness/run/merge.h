// `fusebench merge`: joins the databases of `run --shard K/N` into one run. Shards must come
// from the same scenario set, schema version and fusebench commit; each case is stored once
// (by its place in the matrix), and merging a shard a second time adds nothing.
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace fb {

struct MergeSummary {
  int64_t run_id = 0;     // the run in the output that holds the merged cases
  size_t added = 0;       // cases copied in
  size_t duplicates = 0;  // cases the output already held (a shard merged again, or overlapping shards)
  std::vector<std::string> missing_shards;  // "3/4": not merged yet; the run stays unfinished until none are
};

// Reads each shard's latest run without changing the shard files. Throws fb::Error naming
// the shard that does not fit (other scenarios, schema or commit; an unfinished run).
MergeSummary merge_shards(const std::vector<std::string>& shard_paths, const std::string& out_path,
                          const std::string& command, std::ostream& log);

}  // namespace fb
