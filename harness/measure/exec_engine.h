// One run of the engine as `fusebench exec --executor engine` makes it, shared with the
// ONNX conformance test so that the test checks exactly what users run: the model's inputs
// that feed shapes (engine/builder/shape_inputs.h) are bound at build time from the
// inputs given, the engine is made, and it runs once on the other inputs.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime/engine.h"

namespace fb {

struct EngineExec {
  std::unique_ptr<Engine> engine;
  // What the run kept (Engine::kept_values): the outputs, or every tensor under mark-all.
  std::vector<std::pair<std::string, Tensor>> kept;
};

// `inputs` are the model's, in `model`'s graph-input order. `make` builds the engine for a
// config (or loads a plan: where `cfg` already binds an input, as a plan's config does, the
// given value must equal the bound one, else an Error names the input).
EngineExec exec_engine(const Graph& model, BuildConfig cfg, const std::vector<Tensor>& inputs,
                       const std::function<std::unique_ptr<Engine>(const BuildConfig&)>& make);

}  // namespace fb
