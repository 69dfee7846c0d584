// The arithmetic an int8 layer shares: activations quantized per tensor with their
// calibrated threshold (u8 over [0, amax] when calibration never saw a negative value,
// else s8 symmetric), weights per output channel (s8 symmetric, their own |max|).
// A quantized value q stands for q * scale; a layer's float32 output is
// (input scale * weight scale[channel]) * the integer product.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "engine/ir/tensor.h"
#include "engine/quant/int8_representation.h"

namespace fb {

// The step of one quantized unit: amax / 255 unsigned, amax / 127 signed.
float int8_input_scale(float amax, bool is_unsigned);

// x[0..n) → round(x / scale), saturated to u8 (is_unsigned) or s8; in parallel for large n.
// zero_point 128 keeps a signed tensor as u8 (engine/quant/int8_representation.h).
void quantize_input(const float* x, int64_t n, float scale, bool is_unsigned, void* out, int zero_point = 0);
// The same on the calling thread (a row of a layer that is itself parallel).
void quantize_serial(const float* x, int64_t n, float scale, bool is_unsigned, void* out, int zero_point = 0);

// A u8/s8 tensor as the float32 values it stands for: scale * (q - zero_point).
Tensor dequantized(const Tensor& q, float scale, int zero_point = 0);

// Weights viewed as [outer, channels, inner] (a [K, N] matrix: outer K, inner 1; [N, K]:
// outer 1, inner K; a convolution's [M, C/G, k...]: outer 1, inner C/G·k...): s8 values
// into `q` (same layout) and each channel's scale into `scales` (1 for an all-zero channel).
void quantize_weights_per_channel(const float* w, int64_t outer, int64_t channels, int64_t inner, int8_t* q,
                                  std::vector<float>& scales);

// A tabled activation (engine/quant/int8_representation.h: is_tabled_activation). Entry b (an s8 value q, indexed by its byte as u8): activation(q · in_scale) quantized at
// out_scale plus zero_point, saturated to u8 (out_u8) or s8.
std::vector<uint8_t> activation_table(const std::string& activation, float in_scale, float out_scale, bool out_u8,
                                      int zero_point);
// bytes[i] = table[bytes[i]] over every byte, in parallel for large counts.
void apply_table(uint8_t* bytes, int64_t count, const uint8_t* table);

}  // namespace fb
