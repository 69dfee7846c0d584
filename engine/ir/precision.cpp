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

const std::vector<Precision>& known_precisions() {
  static const std::vector<Precision> all{Precision::FP32, Precision::TF32, Precision::BF16, Precision::FP16, Precision::INT8};
  return all;
}

std::string known_precision_names() {
  std::string names;
  for (Precision p : known_precisions()) names += (names.empty() ? "" : ", ") + std::string(precision_name(p));
  return names;
}

Precision parse_precision(const std::string& s, const std::string& what) {
  for (Precision p : known_precisions())
    if (s == precision_name(p)) return p;
  throw Error((what.empty() ? "" : what + ": ") + "unknown precision '" + s + "' (known: " + known_precision_names() + ")");
}

std::string PrecisionSet::str() const {
  std::string r;
  for (int i = 0; i < kPrecisionCount; ++i)
    if (contains(Precision(i))) r += (r.empty() ? "" : ", ") + std::string(precision_name(Precision(i)));
  return r;
}

}  // namespace fb
