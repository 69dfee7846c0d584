#include "harness/measure/exec_engine.h"

#include <cstring>
#include <map>

#include "engine/builder/shape_inputs.h"

namespace fb {

namespace {
bool same_value(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}
}  // namespace

EngineExec exec_engine(const Graph& model, BuildConfig cfg, const std::vector<Tensor>& inputs,
                       const std::function<std::unique_ptr<Engine>(const BuildConfig&)>& make) {
  if (inputs.size() != model.inputs.size())
    throw Error("the model takes " + std::to_string(model.inputs.size()) + " inputs, got " + std::to_string(inputs.size()));
  std::map<std::string, const Tensor*> by_name;
  for (size_t i = 0; i < inputs.size(); ++i) by_name[model.inputs[i].name] = &inputs[i];
  for (const ShapeInputUse& use : find_shape_inputs(model)) {
    const Tensor& given = *by_name.at(use.input);
    auto bound = cfg.constant_inputs.find(use.input);
    if (bound != cfg.constant_inputs.end()) {
      if (!same_value(bound->second, given))
        throw Error("input '" + use.input + "' " + shape_use_str(use) + " and was bound to " + value_preview(bound->second) +
                    " when the engine was built; the value given is " + value_preview(given) +
                    " (build another plan for it)");
      continue;
    }
    cfg.constant_inputs[use.input] = given;
    cfg.input_shapes.erase(use.input);  // no longer an input of the engine
  }
  EngineExec r;
  r.engine = make(cfg);
  std::vector<Tensor> engine_inputs;
  for (const GraphInput& in : r.engine->graph().inputs) {
    auto it = by_name.find(in.name);
    if (it == by_name.end()) throw Error("the engine takes an input '" + in.name + "' the model does not have");
    engine_inputs.push_back(*it->second);
  }
  r.engine->run(engine_inputs);
  r.kept = r.engine->kept_values();
  return r;
}

}  // namespace fb
