// The int8 half of precision lowering (engine/passes/precision_lowering.cpp).
//
// An int8 layer is a matrix product (MatMul, Gemm, FusedMatMul) or convolution (Conv,
// FusedConv) with constant float32 weights, which its kernel quantizes per output channel,
// and a threshold for its input: attributes int8_input_amax and int8_input_unsigned, from
// calibration (BuildConfig::int8_ranges) or from the model's own Q/DQ pair; or a
// fusebench.Attention with calibrated q, k and v (int8_input_amax, int8_k_amax, int8_v_amax).
//
//   explicit:   x ─▶ QuantizeLinear(s, 0) ─▶ DequantizeLinear(s, 0) ─▶ MatMul/Conv (input 0)
//               ⇒ x ─▶ [int8 MatMul/Conv] with threshold s·127 (s8) or s·255 (u8)
//
// The pair goes when every reader of the dequantized tensor is such a layer; with a zero
// point other than 0 (int8 kernels here are symmetric) or other readers it stays, and runs
// as written. A layer a constraint keeps in fp32 keeps its Q/DQ pair too.
#pragma once
#include <string>
#include <vector>

#include "engine/passes/pass.h"

namespace fb {

// An int8 layer's quantized inputs: which input, the attribute holding its threshold,
// whether it may be u8 (a matrix product's or convolution's data input may; attention's
// q, k and v are s8).
struct Int8Slot {
  size_t input;
  const char* amax_attr;
  bool may_be_unsigned;
};
std::vector<Int8Slot> int8_slots(const Node& n);
// Gives an int8 layer its thresholds from the calibrated ranges (why_not_int8 said "").
void set_int8_thresholds(Node& n, const BuildConfig& cfg);

// Rewrites explicit Q/DQ pairs into int8 layers; returns how many pairs went.
int explicit_quantization(PassContext& ctx);
// Why `n` (an op of definition `def`) cannot run in int8 ("" when it can); its threshold is
// its own attribute (explicit) or the calibrated range of its input in `cfg`.
std::string why_not_int8(const Graph& g, const Node& n, const OpDef& def, const BuildConfig& cfg);
bool is_int8_layer(const Node& n);  // precision int8 with its input threshold
// Puts the quantization of int8 layers' inputs in the graph (see the .cpp); returns how
// many tensors it quantized.
int quantize_int8_inputs(PassContext& ctx);

}  // namespace fb
