// How an int8 tensor holds its values, shared by precision lowering (which chooses) and
// the kernels (which read and write it). A value x with threshold amax is stored as
//   u8:            round(x / (amax / 255)), for a tensor never negative in calibration;
//   s8:            round(x / (amax / 127)), clamped to ±127 (symmetric);
//   s8 kept as u8: the s8 value + 128, for a signed tensor only matrix products read:
//                  oneDNN's u8 × s8 matmul with a source zero point ran 20-25% faster here
//                  than its s8 × s8 one (VNNI multiplies u8 by s8; s8 sources need a shift).
#pragma once

namespace fb {

inline constexpr int kSignedAsU8ZeroPoint = 128;

}  // namespace fb
