// How an int8 tensor holds its values, shared by precision lowering (which chooses) and
// the kernels (which read and write it). A value x with threshold amax is stored as
//   u8:            round(x / (amax / 255)), for a tensor never negative in calibration;
//   s8:            round(x / (amax / 127)), clamped to ±127 (symmetric);
//   u8 with zero point z (1..255): round(x / (amax / 127)) + z, clamped to [0, 255]:
//                  a signed tensor only matrix products read, kept as u8 with z = 128
//                  (oneDNN's u8 × s8 matmul with a source zero point ran 20-25% faster
//                  here than its s8 × s8 one: VNNI multiplies u8 by s8; s8 sources need a
//                  shift), or an explicitly quantized asymmetric tensor, with the model's
//                  scale (amax = 127 · scale) and zero point (an s8 one plus 128).
#pragma once
#include <string>

namespace fb {

inline constexpr int kSignedAsU8ZeroPoint = 128;

// Activations an int8 layer writing a quantized output runs as a table (a fused layer's
// "activation" attribute): an erf, exp or division per element in oneDNN's epilogue cost as
// much as the product itself (BERT's FFN, EfficientNet's expansion convolutions). The layer
// writes the activation's input as s8 at its calibrated threshold (attribute
// int8_activation_input_amax), and one byte lookup per element gives the activation's
// output as the reader reads it (engine/ops/int8_quantize.h: activation_table).
inline bool is_tabled_activation(const std::string& a) {
  return a == "gelu" || a == "gelu_tanh" || a == "silu" || a == "sigmoid";
}

}  // namespace fb
