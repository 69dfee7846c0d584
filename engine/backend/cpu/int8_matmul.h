// An int8 matrix product: A comes quantized (u8 or s8, by a fusebench.Quantize or by the
// int8 layer before), the constant B is quantized here per output column
// (engine/ops/int8_quantize.h), u8/s8 × s8 accumulate in int32 on oneDNN (VNNI's
// vpdpbusd where the CPU has it), and the epilogue dequantizes, adds the bias, activates
// and writes float32 or, for an int8 reader, quantizes again with that reader's threshold.
#pragma once
#include <memory>
#include <string>

#include "engine/backend/cpu/matmul.h"

namespace fb {

struct Int8MatMulSpec {
  Shape a;                 // [..., M, K]: the leading dimensions are rows
  Shape b;                 // [K, N], or [N, K] when trans_b
  bool trans_b = false;
  bool has_bias = false;   // float32 [N]
  float alpha = 1.f;
  ActivationKind activation = ActivationKind::None;
  float input_amax = 0;    // A's calibrated threshold
  bool input_unsigned = false;
  int input_zero_point = 0;  // 1..255: A is u8 with this zero point (engine/quant/int8_representation.h)
  float output_amax = 0;   // > 0: the output is written quantized with this threshold
  bool output_unsigned = false;
  int output_zero_point = 0;
  // > 0, with a GELU activation and a quantized output: the calibrated threshold of the
  // activation's input. The product is then written as s8 at that threshold and a 256-entry
  // table maps each value to GELU's, quantized for the reader, in place
  // (engine/ops/int8_quantize.h: activation_table).
  float activation_input_amax = 0;
};

class Int8MatMulKernel {
 public:
  // `b` is the constant float32 weights: quantized here, once.
  Int8MatMulKernel(const Int8MatMulSpec& spec, const float* b);
  ~Int8MatMulKernel();
  double flops() const;
  // "onednn.matmul[brg:avx512_core_vnni] u8s8"
  std::string describe() const;
  // a: quantized A; out: float32, or u8/s8 when the spec has an output threshold.
  void run(const void* a, const float* bias, void* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fb
