// Scaled dot-product attention over the [batch, seq, heads·dim] layout that Q/K/V
// projections produce: softmax(Q·Kᵀ·scale + mask) · V per head, written straight back into
// [batch, seq, heads·dim]. The multi-head split and merge (Reshape + Transpose) never
// materialize: oneDNN reads and writes the heads through strides.
#pragma once
#include <memory>

#include "engine/ir/tensor.h"

namespace fb {

class AttentionKernel {
 public:
  // q: [B, Sq, H], k and v: [B, Sk, H], H = heads · dim. An additive mask, when given, is
  // rank 4 and broadcasts to the scores [B, heads, Sq, Sk] (each dim full or 1: BERT's
  // [B, 1, 1, Sk] padding mask, a causal [1, 1, Sq, Sk]).
  AttentionKernel(const Shape& q, const Shape& k, int64_t heads, float scale, const Shape* mask = nullptr);
  ~AttentionKernel();
  AttentionKernel(AttentionKernel&&) noexcept;
  double flops() const;
  void run(const float* q, const float* k, const float* v, float* out, const float* mask = nullptr);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace fb
