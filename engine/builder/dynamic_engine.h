// A dynamic engine: built for an optimization profile (TensorRT's: for each graph input
// the least, the usual and the largest shape it accepts) instead of for one shape.
//
// Design. Every layer of an Engine is planned for fixed shapes: arena offsets, prebuilt
// oneDNN primitives with their weights reordered for them, fusions and layouts chosen
// for those shapes. So a dynamic engine is a set of static specializations of one model:
// the one for the profile's opt shapes is built with the engine; any other shape inside
// the profile gets its own on first sight (a full build, timed and logged), and the
// `max_specializations` most recently used are kept. A shape outside the profile is an
// Error naming the input and dimension. What dynamic shapes cost here is therefore the
// first run at each new shape and the memory of the kept specializations; once a shape
// is specialized, it runs that static engine's plan, behind one lookup per run.
//
// Not done: kernels that take a run-time dimension (oneDNN's runtime dims) and one arena
// shared by the specializations; a plan file holds a static engine only.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime/engine.h"

namespace fb {

// The full profile of `g` under `config`: a range for every graph input (inputs the
// profile does not name have their one static shape as min, opt and max). The batch range
// applies to dim 0 of the inputs whose batch the model leaves symbolic; a shape_profile
// entry wins for its input. Errors name the input and dimension: an unknown input, a rank
// that differs from the model's, min > opt or opt > max, or a range over a dimension the
// model fixes.
std::map<std::string, ShapeRange> resolve_shape_profile(const Graph& g, const BuildConfig& config);

class DynamicEngine {
 public:
  // Builds the specialization for the profile's opt shapes (config.is_dynamic()).
  DynamicEngine(const Graph& imported, const BuildConfig& config, EngineKernels kernels = {}, size_t max_specializations = 4);

  // Runs on inputs in graph-input order: the specialization for their shapes, built first
  // if this is the first run at those shapes (or it was dropped since).
  void run(const std::vector<Tensor>& inputs);
  // Views of the outputs of the last run (valid until the next run).
  std::vector<Tensor> outputs() const;
  // The specialization for these shapes (graph-input order), built if new.
  Engine& engine_for(const std::vector<Shape>& shapes);
  // The input shapes (graph-input order) at this batch, the other dims as the model and
  // config.input_shapes give them: what a dynamic batch range means at one batch.
  std::vector<Shape> shapes_at_batch(int64_t batch) const;
  // The static engine config that shapes get: the profile dropped, the shapes bound.
  BuildConfig specialized_config(const std::vector<Shape>& shapes) const;

  const std::map<std::string, ShapeRange>& profile() const { return profile_; }
  // The profile's opt shapes, in graph-input order (bound inputs left out): the shapes
  // the engine was built for first.
  std::vector<Shape> opt_shapes() const;
  // The profile, the opt build's log, then a line per specialization built or dropped.
  const std::vector<std::string>& build_log() const { return log_; }
  // How long the most recent new shape took to specialize (its build), in ms; 0 before any.
  double last_specialization_ms() const { return last_specialization_ms_; }
  size_t specializations_built() const { return built_; }
  // Activation memory of the specializations kept now.
  size_t arena_bytes() const;

 private:
  struct Specialization {
    std::vector<Shape> shapes;
    std::unique_ptr<Engine> engine;
    uint64_t last_used = 0;
  };
  Engine& build_for(const std::vector<Shape>& shapes);

  Graph imported_;
  BuildConfig config_;
  EngineKernels kernels_;
  size_t max_specializations_;
  std::map<std::string, ShapeRange> profile_;
  std::vector<std::string> input_names_;  // graph-input order
  std::vector<Specialization> kept_;
  Engine* last_ = nullptr;
  uint64_t clock_ = 0;
  size_t built_ = 0;
  double last_specialization_ms_ = 0;
  std::vector<std::string> log_;
};

}  // namespace fb
