// The eager region: how the engine runs nodes whose output shapes depend on data. The
// nodes infer_static_shapes lists as dynamic (NonZero, Unique, a Reshape whose shape is
// computed at run time, and every node reading their outputs) leave the planned graph and
// become one layer, fusebench.EagerRegion (engine/ops/eager_region.cpp), at its end. It
// runs them node by node on the op kernels and allocates their outputs at run time.
// No static node reads a dynamic value (a reader of one is dynamic itself), so moving them
// after every static node keeps the order valid, and everything else keeps its planned
// arena and its fusions.
//
// Not done: the region is one layer however many independent dynamic subgraphs there
// are; a node downstream of a data-dependent one whose shape is static again (Shape, a
// ReduceSum over every axis) still runs eagerly; the region's nodes are never fused, run
// in fp32, allocate on every run, and under mark-all only its outputs are kept.
#pragma once
#include <string>
#include <vector>

#include "engine/builder/static_shapes.h"

namespace fb {

// Moves the `dynamic` nodes of `g` (in graph order) into one fusebench.EagerRegion node
// appended to it; says what it did in `log`. Nothing when `dynamic` is empty.
void form_eager_region(Graph& g, const std::vector<DynamicNode>& dynamic, std::vector<std::string>* log);

}  // namespace fb
