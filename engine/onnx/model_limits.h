// Limits on what a model file declares, checked on the parsed ModelProto before anything
// it declares is allocated or converted: a hostile or absurd file is refused with one
// error naming the file, the limit, the value and where (node, initializer, attribute),
// rather than allocating without bound or recursing without end. The defaults let every
// real model through (the largest exported here: ~100 MB of weights, ~1,000 nodes);
// FUSEBENCH_MODEL_LIMITS="nodes=5000,string_bytes=4096" sets any of them for a process.
#pragma once
#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

namespace fb {

struct ModelLimits {
  int64_t tensor_elements = int64_t(1) << 34;  // one declared tensor: initializer, attribute tensor
  int64_t initializer_bytes = 0;               // all initializers together; 0: this machine's memory
  int64_t nodes = 2'000'000;                   // nodes of the graph and every body within it
  int64_t graph_depth = 1'000'000;             // the longest chain of nodes, each reading the last
  int64_t subgraph_nesting = 16;               // If/Loop/Scan bodies within bodies
  int64_t attribute_elements = int64_t(1) << 26;  // ints, floats, strings or graphs in one attribute
  int64_t string_bytes = int64_t(1) << 20;     // one name, op type, domain or attribute string

  // The defaults with FUSEBENCH_MODEL_LIMITS applied; Error naming a bad entry.
  static ModelLimits from_environment();
  // "tensor_elements, initializer_bytes, ...": for messages.
  static const char* names();
  // Sets limit `name` from "N"; Error naming it, and the known names, otherwise.
  void set(const std::string& name, const std::string& value);
};

// Throws Error("SOURCE: WHERE: LIMIT ... VALUE exceeds the limit N (FUSEBENCH_MODEL_LIMITS)").
void check_model_limits(const onnx::ModelProto& model, const std::string& source, const ModelLimits& limits);

}  // namespace fb
