// Scaled dot-product attention over the [batch, seq, heads·dim] layout that Q/K/V
// projections produce: softmax(Q·Kᵀ·scale + mask) · V per head, written straight back into
// [batch, seq, heads·dim]. The multi-head split and merge (Reshape + Transpose) never
// materialize: oneDNN reads and writes the heads through strides.
#pragma once
#include <memory>
#include <string>

#include "engine/ir/tensor.h"

namespace fb {

// int8 attention: q, k and v come as s8 with these steps (threshold / 127); Q·Kᵀ is s8 × s8,
// the softmax runs in float32 and its probabilities are kept as u8 (step 1/255) for P·V,
// u8 × s8 (VNNI). Measured here at BERT's shape (b=8, 4 heads, seq 128, dim 64): Q·Kᵀ
// 99 µs against 211 in f32, P·V 58 against 193.
struct AttentionInt8 {
  float q_step = 0, k_step = 0, v_step = 0;
};

class AttentionKernel {
 public:
  // q: [B, Sq, H], k and v: [B, Sk, H], H = heads · dim. An additive mask, when given, is
  // rank 4 and broadcasts to the scores [B, heads, Sq, Sk] (each dim full or 1: BERT's
  // [B, 1, 1, Sk] padding mask, a causal [1, 1, Sq, Sk]).
  //
  // bf16 (oneDNN's bf16 kernels, use_onednn_bf16): q, k, v and out are bf16; Q·Kᵀ
  // accumulates in float32, the softmax runs in float32 and its probabilities are kept as
  // bf16 for P·V, as PyTorch's bf16 attention does.
  AttentionKernel(const Shape& q, const Shape& k, int64_t heads, float scale, const Shape* mask = nullptr,
                  const AttentionInt8* int8 = nullptr, bool bf16 = false);
  ~AttentionKernel();
  AttentionKernel(AttentionKernel&&) noexcept;
  double flops() const;
  // q, k, v: float32, s8 for an int8 kernel, bf16 for a bf16 one; out: float32 (bf16 for
  // a bf16 kernel); the mask is float32.
  void run(const void* q, const void* k, const void* v, void* out, const float* mask = nullptr);
  std::string describe() const;

 private:
  void softmax_rows(int64_t b0, const float* mask);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Binds fusebench.Attention (engine/ops/attention_op.cpp) to this kernel, float32
// (engine/ops/bound_kernels.h); bind_cpu_kernels() calls it.
void bind_cpu_attention_kernels();

}  // namespace fb
