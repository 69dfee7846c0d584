#include "engine/onnx/opset_upgrade.h"

#include <onnx/version_converter/convert.h>

#include <stdexcept>

#include "engine/ir/error.h"
#include "engine/util/isolated_call.h"

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
  // The converter runs the onnx library's shape inference, which crashes or asks for
  // terabytes on hostile files (fuzz_onnx_import found both): it runs in a child process,
  // and whatever ends it there is one more reason the model runs as written.
  const IsolatedResult converted = call_isolated([&model] {
    std::string bytes;
    if (!onnx::version_conversion::ConvertVersion(model, static_cast<int>(kMinSupportedOpset)).SerializeToString(&bytes))
      throw std::runtime_error("the converted model could not be serialized");
    return bytes;
  });
  onnx::ModelProto upgraded;
  std::string why = converted.ok ? "" : converted.why;
  if (converted.ok && !upgraded.ParseFromString(converted.output)) why = "its output could not be read back";
  if (!why.empty()) {
    if (why.size() > 200) why = why.substr(0, 200) + "...";
    return {false, "version converter: could not bring " + from + " to opset " + std::to_string(kMinSupportedOpset) +
           " (" + why + "); running " + from + " as written"};
  }
  model = std::move(upgraded);
  return {true, "version converter: converted " + from + " to opset " + std::to_string(kMinSupportedOpset) +
         " with the onnx library's version converter"};
}

}  // namespace fb
