// fusebench merge: join the databases of `run --shard K/N` into one (harness/run/merge.h).
#include <iostream>

#include "harness/cli/commands.h"
#include "harness/cli/options.h"
#include "harness/run/merge.h"

namespace fb::cli {

int cmd_merge(int argc, char** argv) {
  cxxopts::Options opts("fusebench merge", "Join shard databases (run --shard K/N) into one run.");
  opts.positional_help("SHARD.db...");
  opts.add_options()("o,output", "the merged database (created if missing; merging again adds only what is new)",
                     cxxopts::value<std::string>())("shards", "shard databases", cxxopts::value<std::vector<std::string>>());
  opts.parse_positional({"shards"});
  cxxopts::ParseResult args;
  if (auto rc = parse_or_help(opts, argc, argv, &args)) return *rc;
  if (!args.count("shards")) throw Error("no shard databases given");
  if (!args.count("output")) throw Error("-o ALL.db is required");
  std::string command = "fusebench merge";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];

  const std::string out = args["output"].as<std::string>();
  const MergeSummary s = merge_shards(args["shards"].as<std::vector<std::string>>(), out, command, std::cout);
  std::cout << out << ": run " << s.run_id << ", " << s.added << " cases added, " << s.duplicates << " already there";
  if (s.missing_shards.empty()) {
    std::cout << "; all shards merged\n";
  } else {
    std::cout << "; still missing shard(s)";
    for (const std::string& k : s.missing_shards) std::cout << " " << k;
    std::cout << " (the run stays unfinished until they are merged)\n";
  }
  return kExitOk;
}

}  // namespace fb::cli
