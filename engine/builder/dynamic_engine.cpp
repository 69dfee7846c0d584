#include "engine/builder/dynamic_engine.h"

#include <algorithm>
#include <chrono>

#include "engine/builder/builder.h"
#include "engine/builder/static_shapes.h"
#include "engine/ir/error.h"

namespace fb {

namespace {

std::string shapes_str(const std::vector<std::string>& names, const std::vector<Shape>& shapes) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (s.empty() ? "" : ", ") + names[i] + " " + shape_str(shapes[i]);
  return s;
}

void check_range(const GraphInput& in, const ShapeRange& r) {
  const std::string what = "optimization profile for '" + in.name + "'";
  if (r.min.size() != r.opt.size() || r.opt.size() != r.max.size())
    throw Error(what + ": min " + shape_str(r.min) + ", opt " + shape_str(r.opt) + " and max " + shape_str(r.max) +
                " differ in rank");
  if (!in.dims.empty() && r.min.size() != in.dims.size())
    throw Error(what + ": the model gives rank " + std::to_string(in.dims.size()) + ", the profile rank " +
                std::to_string(r.min.size()));
  for (size_t d = 0; d < r.min.size(); ++d) {
    const std::string dim = what + ", dimension " + std::to_string(d);
    if (r.min[d] < 1) throw Error(dim + ": min " + std::to_string(r.min[d]) + " is below 1");
    if (r.min[d] > r.opt[d] || r.opt[d] > r.max[d])
      throw Error(dim + ": expected min <= opt <= max, got " + std::to_string(r.min[d]) + ", " + std::to_string(r.opt[d]) +
                  ", " + std::to_string(r.max[d]));
    if (d < in.dims.size() && in.dims[d] >= 0 && (r.min[d] != in.dims[d] || r.max[d] != in.dims[d]))
      throw Error(dim + ": the model fixes it at " + std::to_string(in.dims[d]) + ", the profile asks for " +
                  std::to_string(r.min[d]) + ".." + std::to_string(r.max[d]));
  }
}

}  // namespace

std::map<std::string, ShapeRange> resolve_shape_profile(const Graph& g, const BuildConfig& config) {
  for (const auto& [name, _] : config.shape_profile) {
    const bool input = std::any_of(g.inputs.begin(), g.inputs.end(), [&name = name](const GraphInput& in) { return in.name == name; });
    if (!input) throw Error("optimization profile names '" + name + "', which is not a graph input");
    if (config.constant_inputs.count(name)) throw Error("optimization profile names '" + name + "', which is bound to a constant");
  }
  const BatchRange& b = config.dynamic_batch;
  if (!b.empty() && (b.min < 1 || b.min > b.opt || b.opt > b.max))
    throw Error("dynamic batch: expected 1 <= min <= opt <= max, got " + std::to_string(b.min) + ", " + std::to_string(b.opt) +
                ", " + std::to_string(b.max));
  const int64_t opt_batch = b.empty() ? config.batch : b.opt;
  const auto at = [&](int64_t batch) { return bind_input_shapes(g, batch, config.input_shapes); };
  const std::map<std::string, Shape> lo = at(b.empty() ? opt_batch : b.min), mid = at(opt_batch),
                                     hi = at(b.empty() ? opt_batch : b.max);
  std::map<std::string, ShapeRange> profile;
  for (const GraphInput& in : g.inputs) {
    if (config.constant_inputs.count(in.name)) continue;
    auto given = config.shape_profile.find(in.name);
    ShapeRange r = given != config.shape_profile.end() ? given->second : ShapeRange{lo.at(in.name), mid.at(in.name), hi.at(in.name)};
    check_range(in, r);
    profile[in.name] = r;
  }
  return profile;
}

DynamicEngine::DynamicEngine(const Graph& imported, const BuildConfig& config, EngineKernels kernels, size_t max_specializations)
    : imported_(imported), config_(config), kernels_(std::move(kernels)), max_specializations_(std::max<size_t>(1, max_specializations)) {
  if (!config.is_dynamic()) throw Error("a dynamic engine needs an optimization profile (a shape profile or a dynamic batch)");
  profile_ = resolve_shape_profile(imported_, config_);
  for (const GraphInput& in : imported_.inputs)
    if (!config_.constant_inputs.count(in.name)) input_names_.push_back(in.name);
  for (const std::string& name : input_names_) {
    const ShapeRange& r = profile_.at(name);
    if (r.min != r.max)
      log_.push_back("optimization profile: " + name + " min " + shape_str(r.min) + ", opt " + shape_str(r.opt) + ", max " +
                     shape_str(r.max));
  }
  log_.push_back("dynamic engine: one static specialization per input shape, built on first sight; the " +
                 std::to_string(max_specializations_) + " most recently used are kept; built now for opt");
  Engine& first = build_for(opt_shapes());
  for (const std::string& line : first.build_log()) log_.push_back(line);
}

std::vector<Shape> DynamicEngine::opt_shapes() const {
  std::vector<Shape> opt;
  for (const std::string& name : input_names_) opt.push_back(profile_.at(name).opt);
  return opt;
}

std::vector<Shape> DynamicEngine::shapes_at_batch(int64_t batch) const {
  const std::map<std::string, Shape> bound = bind_input_shapes(imported_, batch, config_.input_shapes);
  std::vector<Shape> shapes;
  for (const std::string& name : input_names_) shapes.push_back(bound.at(name));
  return shapes;
}

BuildConfig DynamicEngine::specialized_config(const std::vector<Shape>& shapes) const {
  BuildConfig c = config_;
  c.shape_profile.clear();
  c.dynamic_batch = {};
  for (size_t i = 0; i < input_names_.size(); ++i) c.input_shapes[input_names_[i]] = shapes[i];
  // The batch the build log and the symbolic dims of shape-computing subgraphs see.
  for (const GraphInput& in : imported_.inputs)
    for (size_t i = 0; i < input_names_.size(); ++i)
      if (in.name == input_names_[i] && !in.dims.empty() && in.dims[0] < 0 && !shapes[i].empty()) {
        c.batch = shapes[i][0];
        return c;
      }
  return c;
}

Engine& DynamicEngine::build_for(const std::vector<Shape>& shapes) {
  if (kept_.size() >= max_specializations_) {
    auto oldest = std::min_element(kept_.begin(), kept_.end(),
                                   [](const Specialization& a, const Specialization& b) { return a.last_used < b.last_used; });
    log_.push_back("dropped the specialization for " + shapes_str(input_names_, oldest->shapes) + " (least recently used)");
    if (last_ == oldest->engine.get()) last_ = nullptr;
    kept_.erase(oldest);
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Engine> e = build_engine(imported_, specialized_config(shapes), kernels_);
  last_specialization_ms_ = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  ++built_;
  char ms[32];
  std::snprintf(ms, sizeof ms, "%.1f", last_specialization_ms_);
  log_.push_back("specialized for " + shapes_str(input_names_, shapes) + " in " + ms + " ms (" + std::to_string(e->layers().size()) +
                 " layers, arena " + std::to_string(e->arena_bytes()) + " bytes)");
  kept_.push_back(Specialization{shapes, std::move(e), ++clock_});
  return *kept_.back().engine;
}

Engine& DynamicEngine::engine_for(const std::vector<Shape>& shapes) {
  if (shapes.size() != input_names_.size())
    throw Error("dynamic engine: " + std::to_string(shapes.size()) + " inputs given, it takes " +
                std::to_string(input_names_.size()));
  for (Specialization& s : kept_)
    if (s.shapes == shapes) {
      s.last_used = ++clock_;
      return *s.engine;
    }
  for (size_t i = 0; i < shapes.size(); ++i) {
    const ShapeRange& r = profile_.at(input_names_[i]);
    if (shapes[i].size() != r.min.size())
      throw Error("input '" + input_names_[i] + "' has shape " + shape_str(shapes[i]) + "; the engine's profile has rank " +
                  std::to_string(r.min.size()));
    for (size_t d = 0; d < shapes[i].size(); ++d)
      if (shapes[i][d] < r.min[d] || shapes[i][d] > r.max[d])
        throw Error("input '" + input_names_[i] + "' dimension " + std::to_string(d) + " is " + std::to_string(shapes[i][d]) +
                    ", outside the engine's optimization profile [" + std::to_string(r.min[d]) + ", " +
                    std::to_string(r.max[d]) + "]");
  }
  return build_for(shapes);
}

void DynamicEngine::run(const std::vector<Tensor>& inputs) {
  // A kept shape is found without building a shape list: the per-run cost stays a compare.
  for (Specialization& s : kept_) {
    bool same = s.shapes.size() == inputs.size();
    for (size_t i = 0; same && i < inputs.size(); ++i) same = s.shapes[i] == inputs[i].shape();
    if (!same) continue;
    s.last_used = ++clock_;
    last_ = s.engine.get();
    last_->run(inputs);
    return;
  }
  std::vector<Shape> shapes;
  for (const Tensor& t : inputs) shapes.push_back(t.shape());
  last_ = &engine_for(shapes);
  last_->run(inputs);
}

std::vector<Tensor> DynamicEngine::outputs() const {
  if (!last_) throw Error("dynamic engine: no outputs before the first run");
  return last_->outputs();
}

size_t DynamicEngine::arena_bytes() const {
  size_t total = 0;
  for (const Specialization& s : kept_) total += s.engine->arena_bytes();
  return total;
}

}  // namespace fb
