// Resolves a model reference ("zoo:NAME?k=v" or an ONNX path) to an imported graph, with
// the content hash that case keys are built on.
#pragma once
#include <string>

#include <onnx/onnx_pb.h>

#include "engine/ir/graph.h"

namespace fb {

struct LoadedModel {
  std::string reference;  // as given; zoo specs normalized
  std::string hash;       // sha-256 hex of the serialized model
  onnx::ModelProto proto;
  Graph graph;
  size_t onnx_nodes = 0;
};

LoadedModel load_model(const std::string& reference);

}  // namespace fb
