// Models older than the opsets fusebench follows (11 to 17) are brought up to opset 11 with
// the onnx library's version converter, so the kernels see one set of semantics per op.
#pragma once
#include <string>

#include <onnx/onnx_pb.h>

namespace fb {

constexpr int64_t kMinSupportedOpset = 11;
constexpr int64_t kMaxSupportedOpset = 17;  // the newest Debian's libonnx 1.12 knows

struct OpsetUpgrade {
  bool converted = false;
  std::string log_line;  // for the build log; empty when the model needed nothing
};

// Converts `model` in place when its ONNX opset is below kMinSupportedOpset. When the converter has no adapter for one of
// the model's ops, the model is left as written (the kernels keep the older semantics they
// know) and the line says why. An opset above kMaxSupportedOpset is an error naming `source`.
OpsetUpgrade upgrade_opset(onnx::ModelProto& model, const std::string& source);

}  // namespace fb
