// The batch a command's header names: --batch binds a symbolic dim 0, and a model whose
// inputs fix it runs at its own, whatever --batch says (a static batch-8 file is no batch-1
// engine). Shared by build, exec, inspect and profile.
#pragma once
#include <cstdint>
#include <string>

#include "engine/ir/graph.h"

namespace fb::cli {

// "batch 4", or "batch 8 (fixed by the model's input 'input'; --batch 1 does not apply)".
std::string batch_label(const Graph& model, int64_t batch);

}  // namespace fb::cli
