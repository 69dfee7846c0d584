#include "harness/cli/batch_label.h"

namespace fb::cli {

std::string batch_label(const Graph& model, int64_t batch) {
  for (const GraphInput& in : model.inputs)
    if (!in.dims.empty() && in.dims[0] > 0 && in.dims[0] != batch)
      return "batch " + std::to_string(in.dims[0]) + " (fixed by the model's input '" + in.name + "'; --batch " +
             std::to_string(batch) + " does not apply)";
  return "batch " + std::to_string(batch);
}

}  // namespace fb::cli
