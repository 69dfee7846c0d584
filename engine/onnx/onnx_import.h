// ONNX → IR. Reads a ModelProto (from a file or built in memory), validates it with the
// onnx library's checker (shapes are inferred by the engine's own op table, not by libonnx,
// whose inference crashed on hostile files), and converts nodes, attributes and
// initializers. External data is read relative to the model's folder; a location that
// escapes that folder is refused. Every error names the file, and the node where known.
#pragma once
#include <string>

#include <onnx/onnx_pb.h>

#include "engine/ir/graph.h"

namespace fb {

// Parses an ONNX file; errors name the file.
onnx::ModelProto load_onnx_file(const std::string& path);

// Converts a model to the IR. `source` names the model in messages (its path or zoo spec);
// `base_dir` is where external data files live ("" for in-memory models: external data is refused).
// Takes the model by value: import rewrites it (external data, opset upgrade, shape
// inference), so a caller done with its model moves it in instead of paying for a copy.
Graph import_onnx(onnx::ModelProto model, const std::string& source, const std::string& base_dir);

// One TensorProto to a Tensor (typed fields, raw_data or external data under base_dir).
Tensor tensor_from_proto(const onnx::TensorProto& t, const std::string& base_dir);
// And back, as raw_data (for zoo export and test fixtures).
onnx::TensorProto tensor_to_proto(const Tensor& t, const std::string& name);

}  // namespace fb
