// Seeded inputs, identical for the engine and the reference executor: floats uniform in
// [-1, 1), integers in [0, 8), booleans alternating. Same seed, same bytes, every machine.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

#include "engine/ir/graph.h"

namespace fb {

std::vector<Tensor> make_inputs(const Graph& g, const std::vector<Shape>& shapes, uint64_t seed);

// The inputs an engine built with these constant inputs takes: the model's `inputs` (in the
// model's order) less those bound at build time.
std::vector<Tensor> unbound_inputs(const Graph& g, const std::vector<Tensor>& inputs,
                                   const std::map<std::string, Tensor>& constants);

}  // namespace fb
