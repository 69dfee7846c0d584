#include "engine/ir/precision.h"

#include "engine/ir/error.h"

namespace fb {

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::FP32: return "fp32";
    case Precision::FP16: return "fp16";
    case Precision::BF16: return "bf16";
    case Precision::INT8: return "int8";
    case Precision::TF32: return "tf32";
  }
  return "?";
}

Precision parse_precision(const std::string& s) {
  for (int i = 0; i < kPrecisionCount; ++i)
    if (s == precision_name(Precision(i))) return Precision(i);
  throw Error("unknown precision '" + s + "' (known: fp32, tf32, fp16, bf16, int8)");
}

std::string PrecisionSet::str() const {
  std::string r;
  for (int i = 0; i < kPrecisionCount; ++i)
    if (contains(Precision(i))) r += (r.empty() ? "" : ", ") + std::string(precision_name(Precision(i)));
  return r;
}

}  // namespace fb
