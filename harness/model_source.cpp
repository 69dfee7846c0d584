#include "harness/model_source.h"

#include <filesystem>

#include "engine/onnx/onnx_import.h"
#include "engine/zoo/zoo.h"
#include "engine/util/sha256.h"

namespace fb {

LoadedModel load_model(const std::string& reference) {
  LoadedModel m;
  std::string base_dir;
  if (is_zoo_spec(reference)) {
    m.reference = normalize_zoo_spec(reference);
    m.proto = build_zoo_model(m.reference);
  } else {
    m.reference = reference;
    m.proto = load_onnx_file(reference);
    base_dir = std::filesystem::absolute(reference).parent_path().string();
  }
  m.hash = sha256_hex(m.proto.SerializeAsString());
  m.graph = import_onnx(m.proto, m.reference, base_dir);
  m.onnx_nodes = m.graph.nodes.size();
  return m;
}

}  // namespace fb
