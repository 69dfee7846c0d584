#include "engine/onnx/opset_upgrade.h"

#include <onnx/version_converter/convert.h>

#include "engine/ir/error.h"

namespace fb {

namespace {
int64_t onnx_opset(const onnx::ModelProto& m) {
  for (const auto& op : m.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") return op.version();
  return 0;  // no ONNX domain (training-only models): nothing to convert
}
}  // namespace

OpsetUpgrade upgrade_opset(onnx::ModelProto& model, const std::string& source) {
  const int64_t opset = onnx_opset(model);
  if (opset > kMaxSupportedOpset)
    throw Error(source + ": ONNX opset " + std::to_string(opset) + " is newer than fusebench supports (" +
                std::to_string(kMinSupportedOpset) + " to " + std::to_string(kMaxSupportedOpset) + ")");
  if (opset == 0 || opset >= kMinSupportedOpset) return {};
  const std::string from = "opset " + std::to_string(opset);
  try {
    model = onnx::version_conversion::ConvertVersion(model, static_cast<int>(kMinSupportedOpset));
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (why.size() > 200) why = why.substr(0, 200) + "...";
    return {false, "version converter: could not bring " + from + " to opset " + std::to_string(kMinSupportedOpset) +
           " (" + why + "); running " + from + " as written"};
  }
  return {true, "version converter: converted " + from + " to opset " + std::to_string(kMinSupportedOpset) +
         " with the onnx library's version converter"};
}

}  // namespace fb
