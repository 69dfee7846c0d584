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

namespace fb {

inline constexpr int kSignedAsU8ZeroPoint = 128;

}  // namespace fb
