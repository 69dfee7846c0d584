// Build options for a MODEL that may be a plan: the options a user left out take the
// plan's values (`fusebench inspect x.plan` needs no flags); one given explicitly must
// agree with the plan (make_engine says which field does not).
#pragma once
#include "harness/cli/options.h"
#include "harness/model_source.h"

namespace fb::cli {

inline BuildConfig build_config_for(const cxxopts::ParseResult& args, const LoadedModel& m) {
  BuildConfig cfg = build_config_from(args);
  if (!m.plan) return cfg;
  const BuildConfig& built = m.plan->config;
  if (!args.count("fusion")) cfg.fusion = built.fusion;
  if (!args.count("batch")) cfg.batch = built.batch;
  if (!args.count("exclude-node")) cfg.exclude_nodes = built.exclude_nodes;
  if (!args.count("exclude-op")) cfg.exclude_op_types = built.exclude_op_types;
  if (!args.count("partition")) cfg.partition_points = built.partition_points;
  if (!args.count("precision")) cfg.precision = built.precision;
  if (!args.count("layer-precision")) cfg.layer_precisions = built.layer_precisions;
  if (!args.count("precision-mode")) cfg.precision_mode = built.precision_mode;
  cfg.input_shapes = built.input_shapes;
  cfg.constant_inputs = built.constant_inputs;
  cfg.threads = built.threads;
  return cfg;
}

}  // namespace fb::cli
