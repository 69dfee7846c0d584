// fusebench.Attention's shapes: q [B, Sq, H], k and v [B, Sk, H], H = heads · dim, and an
// additive mask, when given, of rank 4 that broadcasts to the scores [B, heads, Sq, Sk]
// (each dim full or 1: BERT's [B, 1, 1, Sk] padding mask, a causal [1, 1, Sq, Sk]).
// Shared by the op's shape inference and the backends' kernels.
#pragma once
#include <cstdint>

#include "engine/ir/shape.h"

namespace fb {

struct AttentionShapes {
  int64_t b = 0, sq = 0, sk = 0, hidden = 0, heads = 0, d = 0;
  bool masked = false;
  int64_t mask_stride[4] = {0, 0, 0, 0};  // per score dim; 0 where the mask broadcasts
};

// Error when q and k do not fit, heads does not divide H, or the mask does not broadcast.
AttentionShapes attention_shapes(const Shape& q, const Shape& k, int64_t heads, const Shape* mask = nullptr);

}  // namespace fb
