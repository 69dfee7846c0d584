// An int8 matrix product with float32 inputs and output: A quantized per tensor with its
// calibrated threshold, the constant B per output column (engine/backend/cpu/int8_quantize.h),
// u8/s8 × s8 with int32 accumulation on oneDNN (VNNI's vpdpbusd where the CPU has it),
// dequantized, biased and activated in the primitive's epilogue.
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
  MatMulActivation activation = MatMulActivation::None;
  float input_amax = 0;    // A's calibrated threshold
  bool input_unsigned = false;
};

class Int8MatMulKernel {
 public:
  // `b` is the constant float32 weights: quantized here, once.
  Int8MatMulKernel(const Int8MatMulSpec& spec, const float* b);
  ~Int8MatMulKernel();
  double flops() const;
  // "onednn.matmul[brg:avx512_core_vnni] u8s8"
  std::string describe() const;
  void run(const float* a, const float* bias, float* out);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fb
