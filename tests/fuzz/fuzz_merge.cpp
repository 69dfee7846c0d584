// `fusebench merge` of a hostile shard database: the input is the shard's file, merged into
// a fresh output database (SQLite's own reading, our schema check, the run and case readers,
// the shard checks, the copy).
#include <filesystem>
#include <sstream>

#include "fuzz_guard.h"
#include "harness/run/merge.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string shard = fb::fuzz::write_scratch("shard.db", data, size);
  const std::string out = (fb::fuzz::scratch_dir() / "merged.db").string();
  std::filesystem::remove(out);
  std::ostringstream log;
  fb::fuzz::refusals_only([&] { fb::merge_shards({shard}, out, "fusebench merge shard.db -o merged.db", log); });
  return 0;
}
