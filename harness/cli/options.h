// Shared command-line plumbing: the flag groups several commands share (parsing itself is
// harness/cli/parse_options.h).
#pragma once
#include <cxxopts.hpp>

#include <cstdio>
#include <filesystem>
#include <string>

#include "engine/config/build_config.h"
#include "engine/ir/error.h"
#include "harness/cases/case_fields.h"
#include "harness/cases/plugin_settings.h"
#include "harness/cli/parse_options.h"
#include "harness/judge/compare.h"
#include "harness/util/format_number.h"
#include <iostream>
#include <optional>

namespace fb::cli {

// How compare judges a case, as `compare` and `explain` take it: --alpha, --min-effect and
// --cross-host.
inline void add_judgement_options(cxxopts::Options& opts) {
  opts.add_options()("alpha", "two-sided level of the change's interval", cxxopts::value<double>()->default_value("0.01"))(
      "min-effect", "the smallest change that must be detected (0.03 = 3%); noise above it is 'noisy'",
      cxxopts::value<double>()->default_value("0.03"))(
      "cross-host", "judge engine and reference times even when the runs' machines differ");
}

inline CompareOptions judgement_options_from(const cxxopts::ParseResult& args) {
  CompareOptions o;
  o.alpha = args["alpha"].as<double>();
  o.min_effect = args["min-effect"].as<double>();
  o.cross_host = args.count("cross-host") > 0;
  return o;
}

// The options every command that builds an engine from a MODEL takes: the MODEL and the
// build flags of the case table (harness/cases/case_fields.h).
inline void add_build_options(cxxopts::Options& opts, const std::string& default_fusion) {
  opts.positional_help("MODEL");
  opts.add_options()("model", "ONNX path or zoo:NAME[?k=v...]", cxxopts::value<std::string>());
  for (const CaseField& f : case_fields())
    if (f.add_flags) f.add_flags(opts, default_fusion);
  opts.parse_positional({"model"});
}

// The build config those options describe.
inline BuildConfig build_config_from(const cxxopts::ParseResult& args) {
  BuildConfig cfg;
  for (const CaseField& f : case_fields())
    if (f.from_flags) f.from_flags(args, /*only_given=*/false, cfg);
  return cfg;
}

// --plugin and --insert-plugin, for the commands that build a MODEL with plugins.
inline void add_plugin_options(cxxopts::Options& opts) {
  opts.add_options()("plugin", "plugin library (.so) to load (repeatable)", cxxopts::value<std::vector<std::string>>())(
      "insert-plugin",
      "place a plugin, as a scenario's insert_plugins entry in JSON, e.g. "
      "'{\"op\":\"fusebench.plugin.Copy\",\"after\":\"TENSOR\"}' (repeatable)",
      cxxopts::value<std::vector<std::string>>());
}

inline PluginSettings plugin_settings_from(const cxxopts::ParseResult& args) {
  PluginSettings s;
  if (args.count("plugin"))
    for (const std::string& lib : args["plugin"].as<std::vector<std::string>>())
      s.libraries.push_back(std::filesystem::absolute(lib).lexically_normal().string());
  if (args.count("insert-plugin")) {
    const auto& given = args["insert-plugin"].as<std::vector<std::string>>();
    for (size_t i = 0; i < given.size(); ++i) {
      const std::string field = "--insert-plugin[" + std::to_string(i) + "]";
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(given[i]);
      } catch (const std::exception& e) {
        throw Error(field + ": not JSON: " + given[i]);
      }
      s.placements.push_back(placement_from_json(
          j, field, [](const std::string& f, const std::string& msg) { throw Error(f + ": " + msg); }));
    }
  }
  return s;
}

}  // namespace fb::cli
