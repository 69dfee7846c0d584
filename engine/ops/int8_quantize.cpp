#include "engine/ops/int8_quantize.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "engine/ops/isa_kernels.h"
#include "engine/ops/op_registry.h"

namespace fb {

float int8_input_scale(float amax, bool is_unsigned) { return amax / (is_unsigned ? 255.f : 127.f); }

void quantize_serial(const float* x, int64_t n, float scale, bool is_unsigned, void* out, int zero_point) {
  const float inv = 1.f / scale;
  const IsaKernels& k = isa_kernels();
  if (is_unsigned) k.quantize_u8(x, n, inv, 0.f, 255.f, 0.f, static_cast<uint8_t*>(out));
  else if (zero_point)
    k.quantize_u8(x, n, inv, float(-zero_point), float(255 - zero_point), float(zero_point), static_cast<uint8_t*>(out));
  else k.quantize_s8(x, n, inv, -127.f, 127.f, 0.f, static_cast<int8_t*>(out));
}

void quantize_input(const float* x, int64_t n, float scale, bool is_unsigned, void* out, int zero_point) {
  if (n < 65536) return quantize_serial(x, n, scale, is_unsigned, out, zero_point);
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, n, 32768), [&](const tbb::blocked_range<int64_t>& r) {
    quantize_serial(x + r.begin(), r.end() - r.begin(), scale, is_unsigned, static_cast<uint8_t*>(out) + r.begin(), zero_point);
  });
}

void quantize_weights_per_channel(const float* w, int64_t outer, int64_t channels, int64_t inner, int8_t* q,
                                  std::vector<float>& scales) {
  std::vector<float> amax(channels, 0.f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      const float* p = w + (o * channels + c) * inner;
      for (int64_t i = 0; i < inner; ++i) amax[c] = std::max(amax[c], std::fabs(p[i]));
    }
  scales.resize(channels);
  for (int64_t c = 0; c < channels; ++c) scales[c] = amax[c] > 0 ? amax[c] / 127.f : 1.f;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t at = (o * channels + c) * inner;
      const float inv = 1.f / scales[c];
      for (int64_t i = 0; i < inner; ++i)
        q[at + i] = static_cast<int8_t>(std::clamp(std::nearbyint(w[at + i] * inv), -127.f, 127.f));
    }
}

std::vector<uint8_t> activation_table(const std::string& activation, float in_scale, float out_scale, bool out_u8,
                                      int zero_point) {
  if (!is_tabled_activation(activation)) throw Error("no activation table for '" + activation + "'");
  auto f = [&](double x) {
    if (activation == "gelu") return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    if (activation == "gelu_tanh") return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    const double sigmoid = 1 / (1 + std::exp(-x));
    return activation == "silu" ? x * sigmoid : sigmoid;
  };
  std::vector<uint8_t> table(256);
  for (int b = 0; b < 256; ++b) {
    const double q = std::nearbyint(f(double(int8_t(uint8_t(b))) * in_scale) / out_scale) + zero_point;
    table[b] = out_u8 ? uint8_t(std::clamp(q, 0.0, 255.0)) : uint8_t(int8_t(std::clamp(q, -128.0, 127.0)));
  }
  return table;
}

void apply_table(uint8_t* bytes, int64_t count, const uint8_t* table) {
  // OpenMP, not oneTBB: it runs right after a oneDNN primitive and right before the next,
  // whose OpenMP workers are still spinning (GOMP_SPINCOUNT); oneTBB's workers, spinning
  // in turn after it, slowed the next convolution by half on 2 cores (EfficientNet's).
  constexpr int64_t kChunk = 1 << 15;
  const IsaKernels& k = isa_kernels();
#pragma omp parallel for schedule(static) if (count >= 2 * kChunk)
  for (int64_t start = 0; start < count; start += kChunk)
    k.apply_table(bytes + start, std::min(kChunk, count - start), table);
}

namespace {

// fusebench.Quantize(x) -> u8 or s8, attributes amax, unsigned and zero_point (0, or
// 1..255 for a u8 tensor with a zero point: engine/quant/int8_representation.h): what
// precision lowering puts before int8 layers (once per tensor, however many read it).
DType quantized_type(const Node& n) {
  return n.attr_int("unsigned", 0) || n.attr_int("zero_point", 0) ? DType::UInt8 : DType::Int8;
}

std::vector<ValueInfo> infer_quantize(const ShapeContext& c) {
  if (c.in(0).dtype != DType::Float32) throw Error(c.node.describe() + ": quantizes float32 only");
  if (!(c.node.attr_float("amax", 0.f) > 0)) throw Error(c.node.describe() + ": amax must be positive");
  const int64_t zp = c.node.attr_int("zero_point", 0);
  if (zp < 0 || zp > 255 || (zp != 0 && c.node.attr_int("unsigned", 0)))
    throw Error(c.node.describe() + ": zero_point must be 0..255, and 0 for an unsigned tensor");
  return {ValueInfo{quantized_type(c.node), c.in(0).shape, true}};
}

void compute_quantize(OpContext& c) {
  const bool is_unsigned = c.node.attr_int("unsigned", 0) != 0;
  quantize_input(c.in(0).data<float>(), c.in(0).numel(), int8_input_scale(c.node.attr_float("amax", 0.f), is_unsigned),
                 is_unsigned, c.out(0).raw(), int(c.node.attr_int("zero_point", 0)));
}

}  // namespace

Tensor dequantized(const Tensor& q, float scale, int zero_point) {
  Tensor out(DType::Float32, q.shape());
  float* y = out.data<float>();
  if (q.dtype() == DType::UInt8)
    for (int64_t i = 0; i < q.numel(); ++i) y[i] = scale * (float(static_cast<const uint8_t*>(q.raw())[i]) - float(zero_point));
  else
    for (int64_t i = 0; i < q.numel(); ++i) y[i] = scale * float(static_cast<const int8_t*>(q.raw())[i]);
  return out;
}

void register_int8_quantize_ops(OpRegistry& r) {
  r.add(OpDef{"fusebench", "Quantize", infer_quantize, compute_quantize});
}

}  // namespace fb
