// Binds the batch dimension and gives every value a static shape, or says which nodes
// cannot have one (their shapes depend on data: the eager region runs them,
// engine/builder/eager_region.h). Small values that can be computed at build time (Shape
// of a static tensor, arithmetic on such shapes, Constant nodes) are evaluated along the
// way, so shape-computing subgraphs resolve.
#pragma once
#include <map>
#include <string>

#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"

namespace fb {

// The concrete dims for each graph input: dim 0 left symbolic takes `batch`; any other
// symbolic dimension is an Error naming the input and the dimension.
// `overrides` gives full shapes for inputs by name and wins over the model's dims.
std::map<std::string, Shape> bind_input_shapes(const Graph& g, int64_t batch,
                                               const std::map<std::string, Shape>& overrides = {});

// A node whose output shapes are not known at build time, and why.
struct DynamicNode {
  size_t index;        // in g.nodes
  std::string reason;  // "node 'nz' (NonZero): output 'y' has a data-dependent shape"
  bool downstream = false;  // dynamic only because it reads a dynamic node's output
};

// Fills g.values with static shapes for every node output (bind_input_shapes first);
// returns the build-time values of small computable tensors (for constant folding).
// Errors name the node and op type, including unsupported ops.
// A node whose output shape depends on data (its op says so, or one of its shape inputs,
// OpDef::shape_inputs, is computed at run time), or that reads such a node's output, is
// an Error; with `dynamic` given it is listed there instead, in graph order, its outputs
// left shape_known = false (with their dtype where shape inference gives one).
std::map<std::string, Tensor> infer_static_shapes(Graph& g, int64_t batch,
                                                  const std::map<std::string, Shape>& overrides = {},
                                                  const OpRegistry& ops = *OpRegistry::builtin(),
                                                  std::vector<DynamicNode>* dynamic = nullptr);

// Turns the named graph inputs into initializers holding the given values (dtype and
// shape must fit the model's declaration); errors name the input.
void bind_constant_inputs(Graph& g, const std::map<std::string, Tensor>& values);
// A constant given for graph input `in`, as the input takes it: in its declared shape (K =
// [5] for TopK's int64[1], start = [0] for Range's scalar); an Error naming the input when
// the values do not fill a declared shape.
Tensor as_declared(const GraphInput& in, const Tensor& value);

}  // namespace fb
