// The optimization-profile flags of the commands that build an engine from a MODEL
// (--min-shapes, --opt-shapes, --max-shapes, as trtexec spells them), the checks every one
// of them makes before it builds a dynamic engine, and the engine inspect and profile look at.
#pragma once
#include <cxxopts.hpp>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/builder/dynamic_engine.h"
#include "engine/config/build_config.h"
#include "harness/cases/model_source.h"
#include "harness/cases/plugin_model.h"

namespace fb::cli {

// `group`: kHiddenGroup where a command takes them only to refuse them with a reason.
void add_shape_profile_options(cxxopts::Options& opts, const std::string& group = "");
// The profile the flags give (empty: none); errors name the flag.
std::map<std::string, ShapeRange> shape_profile_from(const cxxopts::ParseResult& args);
// A dynamic engine is built from an ONNX model (not a plan), not under mark-all, and with
// every shape input bound by value; an Error naming the model and what is missing otherwise.
void check_dynamic_build(const LoadedModel& m, const BuildConfig& cfg);

// What inspect and profile look at: the static engine, or for a dynamic one (cfg has a
// profile) its specialization for the profile's opt shapes, with the dynamic engine's log.
struct InspectedEngine {
  std::unique_ptr<Engine> owned;
  std::unique_ptr<DynamicEngine> dynamic;
  Engine* engine = nullptr;
  std::vector<std::string> build_log;
};
InspectedEngine build_for_inspection(const LoadedModel& m, const PluginModel& pm, bool with_plugins, const BuildConfig& cfg);

}  // namespace fb::cli
