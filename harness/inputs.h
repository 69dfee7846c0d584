// Seeded inputs, identical for the engine and the reference executor: floats uniform in
// [-1, 1), integers in [0, 8), booleans alternating. Same seed, same bytes, every machine.
#pragma once
#include <cstdint>
#include <vector>

#include "engine/ir/graph.h"

namespace fb {

std::vector<Tensor> make_inputs(const Graph& g, const std::vector<Shape>& shapes, uint64_t seed);

}  // namespace fb
