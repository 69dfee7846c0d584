// Build options for a MODEL that may be a plan: the options a user left out take the
// plan's values (`fusebench inspect x.plan` needs no flags); one given explicitly must
// agree with the plan (make_engine says which field does not).
#pragma once
#include "harness/cases/model_source.h"
#include "harness/cli/options.h"

namespace fb::cli {

inline BuildConfig build_config_for(const cxxopts::ParseResult& args, const LoadedModel& m) {
  if (!m.plan) return build_config_from(args);
  BuildConfig cfg = m.plan->config;
  for (const CaseField& f : case_fields())
    if (f.from_flags) f.from_flags(args, /*only_given=*/true, cfg);
  return cfg;
}

}  // namespace fb::cli
