// Shape inputs: graph inputs whose values decide shapes, as TensorRT's shape tensors. An
// input is one when it is shape-like (a scalar or a vector of at most kMaxShapeInputElements)
// and its value reaches a shape input (OpDef::shape_inputs: Reshape's shape, Slice's
// starts, Resize's sizes...) of some node, directly or through nodes computing on it. A
// static-shape engine takes their values at build time (BuildConfig::constant_inputs);
// `fusebench exec` binds them from the inputs it is given (harness/measure/exec_engine.h), and a
// build without them fails naming the input. A larger input whose values reach a shape
// (a count taken from an image) is data: the node it reaches runs in the eager region.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ops/op_registry.h"

namespace fb {

constexpr int64_t kMaxShapeInputElements = 64;

struct ShapeInputUse {
  std::string input;  // the graph input
  const Node* node;   // the first node (graph order) whose shape input its value reaches
  int node_input;     // which of that node's inputs
};

// The graph inputs of `g` that feed shapes, in graph-input order. Values are followed
// through every node but Shape and Size, which read their input's shape, never its values.
// Nodes of ops `ops` does not have are passed through (the build names them later).
std::vector<ShapeInputUse> find_shape_inputs(const Graph& g, const OpRegistry& ops = *OpRegistry::builtin());

// "feeds Reshape 'r' (input 1)": what the build log and errors say a shape input is for.
std::string shape_use_str(const ShapeInputUse& use);

// "int64[2] [3, 4]": a tensor's type and its first 8 values, for the build log.
std::string value_preview(const Tensor& t);

}  // namespace fb
