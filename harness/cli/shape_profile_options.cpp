#include "harness/cli/shape_profile_options.h"

#include <algorithm>

#include "engine/builder/builder.h"
#include "engine/builder/shape_inputs.h"
#include "engine/ir/error.h"

namespace fb::cli {

namespace {

// "input:1x3x224x224,mask:1x128" as trtexec's --minShapes writes it, into `profile`'s
// `bound` member (min, opt or max); errors name the flag.
void read_profile_flag(const cxxopts::ParseResult& args, const char* flag, Shape ShapeRange::*bound,
                       std::map<std::string, ShapeRange>& profile) {
  if (!args.count(flag)) return;
  const std::string text = args[flag].as<std::string>();
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(',', start), text.size());
    const std::string item = text.substr(start, end - start);
    const size_t colon = item.rfind(':');
    if (colon == std::string::npos || colon == 0 || colon + 1 == item.size())
      throw Error(std::string("--") + flag + ": expected NAME:DxDx... (e.g. input:1x3x224x224), got '" + item + "'");
    Shape shape;
    size_t p = colon + 1;
    while (p <= item.size()) {
      const size_t x = std::min(item.find('x', p), item.size());
      const std::string dim = item.substr(p, x - p);
      if (dim.empty() || dim.size() > 12 || dim.find_first_not_of("0123456789") != std::string::npos || std::stoll(dim) < 1)
        throw Error(std::string("--") + flag + " '" + item + "': dimension '" + dim + "' is not a positive integer");
      shape.push_back(std::stoll(dim));
      p = x + 1;
    }
    profile[item.substr(0, colon)].*bound = shape;
    start = end + 1;
  }
}

}  // namespace

void add_shape_profile_options(cxxopts::Options& opts, const std::string& group) {
  opts.add_options(group)(
      "min-shapes", "NAME:DxD...[,NAME:...]: a dynamic engine's optimization profile, least shapes (with --opt-shapes and --max-shapes)", cxxopts::value<std::string>())(
      "opt-shapes", "NAME:DxD...[,...]: the shapes the dynamic engine is built for first", cxxopts::value<std::string>())(
      "max-shapes", "NAME:DxD...[,...]: the largest shapes the dynamic engine accepts", cxxopts::value<std::string>());
}

// The optimization profile of --min-shapes, --opt-shapes and --max-shapes: all three name
// the same inputs.
std::map<std::string, ShapeRange> shape_profile_from(const cxxopts::ParseResult& args) {
  std::map<std::string, ShapeRange> profile;
  read_profile_flag(args, "min-shapes", &ShapeRange::min, profile);
  read_profile_flag(args, "opt-shapes", &ShapeRange::opt, profile);
  read_profile_flag(args, "max-shapes", &ShapeRange::max, profile);
  for (const auto& [name, r] : profile)
    if (r.min.empty() || r.opt.empty() || r.max.empty())
      throw Error("optimization profile: '" + name + "' needs a shape in each of --min-shapes, --opt-shapes and --max-shapes");
  return profile;
}

void check_dynamic_build(const LoadedModel& m, const BuildConfig& cfg) {
  if (m.plan) throw Error(m.reference + ": a plan holds a static engine; a dynamic engine is built from the ONNX model");
  if (cfg.fusion == FusionLevel::MarkAll) throw Error("--fusion mark-all: not with a dynamic engine");
  for (const ShapeInputUse& use : find_shape_inputs(m.graph))
    if (!cfg.constant_inputs.count(use.input))
      throw Error(m.reference + ": input '" + use.input + "' " + shape_use_str(use) +
                  ": a dynamic engine binds it when it is built; give it with --shape-input " + use.input + "=V[,V...]");
}

InspectedEngine build_for_inspection(const LoadedModel& m, const PluginModel& pm, bool with_plugins, const BuildConfig& cfg) {
  InspectedEngine r;
  if (cfg.is_dynamic()) {
    check_dynamic_build(m, cfg);
    r.dynamic = naming_model(m, [&] { return std::make_unique<DynamicEngine>(pm.graph(), cfg, EngineKernels{pm.ops}); });
    r.engine = &r.dynamic->engine_for(r.dynamic->opt_shapes());
    r.build_log = r.dynamic->build_log();
    return r;
  }
  r.owned = with_plugins ? build_engine(pm.graph(), cfg, {pm.ops}) : make_engine(m, cfg);
  r.engine = r.owned.get();
  r.build_log = r.engine->build_log();
  return r;
}

}  // namespace fb::cli
