// The engine's IR written as ONNX messages and read back exactly: an optimized graph
// (fused nodes in the "fusebench" domain included) survives the round trip field for
// field, so an engine built from the read graph is the engine that was written.
// ONNX has no place for a few IR fields; they travel in reserved names:
//   node sources and opset   attributes "fusebench.plan.sources" / "fusebench.plan.opset"
//   a graph's opset          the GraphProto doc_string "fusebench.opset=N"
//   ValueInfo::shape_known   the ValueInfoProto doc_string "shape_known"
//   an input's dim_param on a fixed dim   that Dimension's denotation
// Tensors are always written as raw_data; the reader accepts nothing else (no external
// data: a plan never reads other files).
#pragma once
#include <string>

#include <onnx/onnx_pb.h>

#include "engine/ir/graph.h"

namespace fb {

onnx::GraphProto graph_to_proto(const Graph& g);

// Throws Error prefixed with `where` on anything it cannot take exactly.
Graph graph_from_proto(const onnx::GraphProto& gp, const std::string& where);

}  // namespace fb
