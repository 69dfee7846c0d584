// Resolves a model reference ("zoo:NAME?k=v", an ONNX path or a .plan file) to an imported
// graph, with the content hash that case keys are built on.
#pragma once
#include <memory>
#include <string>

#include <onnx/onnx_pb.h>

#include "engine/ir/graph.h"
#include "engine/ir/no_layer_in_precision.h"
#include "engine/plan/plan_format.h"

namespace fb {

struct LoadedModel {
  std::string reference;  // as given; zoo specs normalized
  std::string hash;       // sha-256 hex of `serialized`
  std::string serialized; // the model's bytes (external data not inlined); see source_model()
  Graph graph;
  size_t onnx_nodes = 0;
  std::string base_dir;  // where external data is read from ("" for zoo models and plans)
  // For a plan file: the plan. serialized, graph and hash are then the source model's it
  // carries (the reference executor runs that model; case keys match it).
  std::shared_ptr<const Plan> plan;

  // The model as loaded, parsed again from `serialized` (for the few commands that need
  // the proto itself, such as writing a plan): import consumes its own copy.
  onnx::ModelProto source_model() const;
};

// A reference ending in ".plan" names a plan file (fusebench build).
bool is_plan_path(const std::string& reference);

LoadedModel load_model(const std::string& reference);

// The engine for `wanted`: built from the model, or loaded from its plan without running
// the passes, where the plan's build config must match `wanted` (an Error names the
// field; threads may differ). Call it inside the ThreadScope the engine will run in.
std::unique_ptr<Engine> make_engine(const LoadedModel& m, const BuildConfig& wanted);

// Runs f; an fb::Error from it that does not name the model already gets "MODEL: " in
// front, so that every error about a model (an impossible input or activation size, a
// node the builder refuses) says which file it is about.
template <typename F>
auto naming_model(const LoadedModel& m, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const NoLayerInPrecision& e) {  // kept apart: debug precision takes it as an answer
    if (std::string(e.what()).find(m.reference) != std::string::npos) throw;
    throw NoLayerInPrecision(m.reference + ": " + e.what());
  } catch (const Error& e) {
    if (std::string(e.what()).find(m.reference) != std::string::npos) throw;
    throw Error(m.reference + ": " + e.what());
  }
}

}  // namespace fb
