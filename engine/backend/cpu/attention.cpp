// fusebench.Attention(q, k, v) with attributes heads and scale (defined in
// engine/ops/attention_op.cpp): two strided oneDNN
// matmuls around a row softmax, a few batch items at a time.
#include "engine/backend/cpu/attention.h"

#include <algorithm>
#include <cmath>

#include "engine/backend/cpu/dnnl_context.h"
#include "engine/ops/attention_shapes.h"
#include "engine/ops/bound_kernels.h"
#include "engine/ops/half_float.h"
#include "engine/ops/softmax_row.h"

namespace fb {

using dnnl::memory;

struct AttentionKernel::Impl {
  int64_t b, sq, sk, h, d, hidden;
  int64_t chunk;  // batch items per pass: their scores stay in cache between the three steps
  float scale;
  dnnl::matmul qk, pv;
  memory mq, mk, mv, ms, mp, mo;  // mp: the probabilities P·V reads (the scores in f32)
  std::vector<float> scores;  // [chunk, h, Sq, Sk]
  bool int8 = false, bf16 = false;
  std::vector<uint8_t> probs;  // int8: the probabilities as u8, [chunk, h, Sq, Sk]
  std::vector<uint16_t> probs16;  // bf16: the probabilities as bf16, [chunk, h, Sq, Sk]
  std::string impl;
  bool masked = false;
  int64_t mask_stride[4] = {0, 0, 0, 0};  // per score dim; 0 where the mask broadcasts
};

AttentionKernel::AttentionKernel(const Shape& q, const Shape& k, int64_t heads, float scale, const Shape* mask,
                                 const AttentionInt8* int8, bool bf16)
    : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  const AttentionShapes shapes = attention_shapes(q, k, heads, mask);
  im.b = shapes.b, im.sq = shapes.sq, im.sk = shapes.sk, im.hidden = shapes.hidden, im.h = shapes.heads, im.d = shapes.d;
  im.scale = scale;
  im.masked = shapes.masked;
  std::copy(shapes.mask_stride, shapes.mask_stride + 4, im.mask_stride);
  const auto f32 = memory::data_type::f32;
  im.int8 = int8 != nullptr;
  im.bf16 = bf16 && !im.int8;
  const auto bf = memory::data_type::bf16;
  const auto in_type = im.int8 ? memory::data_type::s8 : im.bf16 ? bf : f32;
  const auto p_type = im.int8 ? memory::data_type::u8 : im.bf16 ? bf : f32;
  const int64_t Sq = im.sq, Sk = im.sk, H = im.hidden, h = im.h, d = im.d;
  // The scores go through Q·Kᵀ, the softmax and P·V; written for the whole batch at once they
  // leave the cache between the steps (ViT-tiny at batch 8: 3.7 MB), so the batch is taken
  // a few items at a time, each pass's scores within kScoresBytes.
  constexpr int64_t kScoresBytes = 1 << 20;
  const int64_t per_item = std::max<int64_t>(1, h * Sq * Sk * int64_t(sizeof(float)));
  im.chunk = 1;
  for (int64_t g = im.b; g >= 1; --g)
    if (im.b % g == 0 && g * per_item <= kScoresBytes) {
      im.chunk = g;
      break;
    }
  const int64_t B = im.chunk;
  // Head i of a [B, S, H] tensor, viewed as [B, h, S, d] through strides.
  memory::desc q_md({B, h, Sq, d}, in_type, {Sq * H, d, H, 1});
  memory::desc kt_md({B, h, d, Sk}, in_type, {Sk * H, d, 1, H});  // Kᵀ: same memory, swapped strides
  memory::desc v_md({B, h, Sk, d}, in_type, {Sk * H, d, H, 1});
  memory::desc s_md({B, h, Sq, Sk}, f32, {h * Sq * Sk, Sq * Sk, Sk, 1});
  memory::desc p_md({B, h, Sq, Sk}, p_type, {h * Sq * Sk, Sq * Sk, Sk, 1});
  memory::desc o_md({B, h, Sq, d}, im.bf16 ? bf : f32, {Sq * H, d, H, 1});
  auto& eng = dnnl_cpu_engine();
  try {
    dnnl::primitive_attr scaled, p_scaled;
    scaled.set_output_scales(0, {im.int8 ? scale * int8->q_step * int8->k_step : scale});
    if (im.int8) p_scaled.set_output_scales(0, {int8->v_step / 255.f});
    dnnl::matmul::primitive_desc qk_pd(dnnl::matmul::desc(q_md, kt_md, s_md), scaled, eng);
    dnnl::matmul::primitive_desc pv_pd(dnnl::matmul::desc(p_md, v_md, o_md), p_scaled, eng);
    im.qk = dnnl::matmul(qk_pd);
    im.pv = dnnl::matmul(pv_pd);
    im.impl = std::string(qk_pd.impl_info_str()) + "," + pv_pd.impl_info_str();
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN could not create the attention matmuls: ") + e.what());
  }
  im.scores.resize(size_t(B * h * Sq * Sk));
  if (im.int8) im.probs.resize(im.scores.size());
  if (im.bf16) im.probs16.resize(im.scores.size());
  im.mq = memory(q_md, eng, DNNL_MEMORY_NONE);
  im.mk = memory(kt_md, eng, DNNL_MEMORY_NONE);
  im.mv = memory(v_md, eng, DNNL_MEMORY_NONE);
  im.ms = memory(s_md, eng, im.scores.data());
  im.mp = memory(p_md, eng, im.int8   ? static_cast<void*>(im.probs.data())
                            : im.bf16 ? static_cast<void*>(im.probs16.data())
                                      : static_cast<void*>(im.scores.data()));
  im.mo = memory(o_md, eng, DNNL_MEMORY_NONE);
}

std::string AttentionKernel::describe() const {
  if (impl_->int8) return "onednn.matmul[" + impl_->impl + "] s8×s8 Q·Kᵀ +softmax→u8 + u8×s8 P·V";
  if (impl_->bf16) return "onednn.matmul[" + impl_->impl + "] bf16×bf16 Q·Kᵀ +softmax→bf16 + bf16×bf16 P·V";
  return "onednn.matmul(strided)+softmax+onednn.matmul(strided)";
}

AttentionKernel::~AttentionKernel() = default;
AttentionKernel::AttentionKernel(AttentionKernel&&) noexcept = default;

double AttentionKernel::flops() const {
  const Impl& im = *impl_;
  return 4.0 * double(im.b * im.h * im.sq * im.sk * im.d);
}

void AttentionKernel::run(const void* q, const void* k, const void* v, void* out, const float* mask) {
  Impl& im = *impl_;
  const int64_t in_bytes = im.int8 ? 1 : im.bf16 ? 2 : 4, out_bytes = im.bf16 ? 2 : 4;
  const int64_t q_item = im.sq * im.hidden, kv_item = im.sk * im.hidden;
  auto at = [](const void* p, int64_t bytes) { return const_cast<char*>(static_cast<const char*>(p)) + bytes; };
  auto& stream = dnnl_cpu_stream();
  for (int64_t b0 = 0; b0 < im.b; b0 += im.chunk) {
    im.mq.set_data_handle(at(q, b0 * q_item * in_bytes));
    im.mk.set_data_handle(at(k, b0 * kv_item * in_bytes));
    im.mv.set_data_handle(at(v, b0 * kv_item * in_bytes));
    im.mo.set_data_handle(at(out, b0 * q_item * out_bytes));
    im.qk.execute(stream, {{DNNL_ARG_SRC, im.mq}, {DNNL_ARG_WEIGHTS, im.mk}, {DNNL_ARG_DST, im.ms}});
    stream.wait();
    softmax_rows(b0, mask);
    im.pv.execute(stream, {{DNNL_ARG_SRC, im.mp}, {DNNL_ARG_WEIGHTS, im.mv}, {DNNL_ARG_DST, im.mo}});
    stream.wait();
  }
}

// The softmax of the scores of batch items [b0, b0 + chunk), with the mask added first.
void AttentionKernel::softmax_rows(int64_t b0, const float* mask) {
  Impl& im = *impl_;
  const int64_t rows = im.chunk * im.h * im.sq, len = im.sk;
  float* s = im.scores.data();
  // On OpenMP, oneDNN's threads: they are still spinning from Q·Kᵀ and go straight on to P·V.
  // On oneTBB, whose workers wake up for each pass and spin on while oneDNN's start, a ViT-tiny
  // layer's softmax at batch 8 took 0.68 ms in passes of two items against 0.36 on OpenMP
  // (0.50 against 0.40 with the whole batch in one pass).
#pragma omp parallel for schedule(static)
  for (int64_t row = 0; row < rows; ++row) {
    float* x = s + row * len;
    if (im.masked) {  // row = (b·h + head)·Sq + i, b counted from b0
      const int64_t i = row % im.sq, bh = row / im.sq;
      const float* m = mask + (b0 + bh / im.h) * im.mask_stride[0] +
                       (bh % im.h) * im.mask_stride[1] + i * im.mask_stride[2];
      const int64_t mj = im.mask_stride[3];
#pragma omp simd
      for (int64_t j = 0; j < len; ++j) x[j] += m[j * mj];
    }
    const float inv = 1.f / softmax_exp_row(x, x, len, softmax_row_max(x, len));
    if (im.int8) {  // p in [0, 1] as u8 steps of 1/255
      uint8_t* p = im.probs.data() + row * len;
      const float to_u8 = 255.f * inv;
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) p[i] = static_cast<uint8_t>(std::nearbyint(x[i] * to_u8));
      continue;
    }
    scale_row(x, len, inv);
    if (im.bf16) narrow_16(DType::BFloat16, x, im.probs16.data() + row * len, len);
  }
}

namespace {

void compute_attention(OpContext& c) {
  const bool masked = c.inputs.size() > 3;
  const Shape mask_shape = masked ? c.in(3).shape() : Shape{};
  AttentionKernel k(c.in(0).shape(), c.in(1).shape(), c.node.attr_int("heads", 0), c.node.attr_float("scale", 1.f),
                    masked ? &mask_shape : nullptr);
  k.run(c.in(0).data<float>(), c.in(1).data<float>(), c.in(2).data<float>(), c.out(0).data<float>(),
        masked ? c.in(3).data<float>() : nullptr);  // the op table's kernel: float32
}

}  // namespace

void bind_cpu_attention_kernels() { bind_op_kernel("fusebench", "Attention", compute_attention); }

}  // namespace fb
