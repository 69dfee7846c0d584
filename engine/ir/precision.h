// The arithmetic a node's kernel computes in, and why the builder chose it. Every node
// carries one (engine/ir/graph.h); the precision-assignment pass at the head of the
// pipeline sets it (engine/passes/precision_assignment.cpp), fusion keeps it (a fused
// node takes its sources' precision, and can_fuse refuses sources that disagree), and
// the engine reports it per layer. tf32 is a matrix-product math mode (float32 tensors,
// products on tensor cores with 10-bit mantissas): only a GPU backend's matrix products
// and convolutions run it, every other layer of a tf32 build stays fp32.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

namespace fb {

enum class Precision : uint8_t { FP32, FP16, BF16, INT8, TF32 };
inline constexpr int kPrecisionCount = 5;

const char* precision_name(Precision p);  // "fp32", "fp16", "bf16", "int8", "tf32"
// Every precision, in the order messages list them: fp32, tf32, bf16, fp16, int8.
const std::vector<Precision>& known_precisions();
std::string known_precision_names();  // "fp32, tf32, bf16, fp16, int8"
// Throws Error listing the names, after `what` (a field or flag) when given.
Precision parse_precision(const std::string& s, const std::string& what = "");

// A set of precisions (which ones an op's kernels take, which ones a backend runs).
class PrecisionSet {
 public:
  constexpr PrecisionSet() = default;
  constexpr PrecisionSet(std::initializer_list<Precision> ps) {
    for (Precision p : ps) bits_ |= bit(p);
  }
  constexpr bool contains(Precision p) const { return (bits_ & bit(p)) != 0; }
  constexpr bool empty() const { return bits_ == 0; }
  constexpr void insert(Precision p) { bits_ |= bit(p); }
  // "fp32, bf16": for error messages.
  std::string str() const;

 private:
  static constexpr uint8_t bit(Precision p) { return uint8_t(1u << uint8_t(p)); }
  uint8_t bits_ = 0;
};

}  // namespace fb
