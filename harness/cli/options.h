// Shared command-line plumbing: cxxopts with fusebench's conventions (every command has
// --help; a parse error is exit code 2 with the command named).
#pragma once
#include <cxxopts.hpp>

#include "engine/builder/build_config.h"
#include "engine/ir/error.h"
#include <iostream>
#include <optional>

namespace fb::cli {

// Parses or prints help. Returns an exit code to return early with, or nullopt to go on.
inline std::optional<int> parse_or_help(cxxopts::Options& opts, int argc, char** argv, cxxopts::ParseResult* out) {
  opts.add_options()("h,help", "show this help");
  try {
    *out = opts.parse(argc, argv);
  } catch (const std::exception& e) {
    std::cerr << opts.program() << ": " << e.what() << "\n\n" << opts.help();
    return 2;
  }
  if (out->count("help")) {
    std::cout << opts.help();
    return 0;
  }
  return std::nullopt;
}

// --exclude-node, --exclude-op and --partition into the build config.
inline void apply_fusion_limits(const cxxopts::ParseResult& args, BuildConfig* cfg) {
  if (args.count("exclude-node")) cfg->exclude_nodes = args["exclude-node"].as<std::vector<std::string>>();
  if (args.count("exclude-op")) cfg->exclude_op_types = args["exclude-op"].as<std::vector<std::string>>();
  if (args.count("partition")) cfg->partition_points = args["partition"].as<std::vector<std::string>>();
}

}  // namespace fb::cli
