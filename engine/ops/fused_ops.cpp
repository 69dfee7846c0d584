// The engine's fused ops (domain "fusebench"): LayerNorm, AddLayerNorm, Gelu, GeluTanh,
// ElementwiseChain, ChannelShuffle and ChannelAffine (FusedMatMul lives with the matmul
// kernels, GroupNorm in group_norm.cpp). Each one replaces a subgraph that a pass in
// engine/passes/ matched; their kernels are the single-pass forms of that subgraph.
#include <tbb/parallel_for.h>

#include <cmath>
#include <cstring>

#include "engine/ops/broadcast.h"
#include "engine/ops/elementwise_chain.h"
#include "engine/ops/half_float.h"
#include "engine/ops/op_registry.h"

namespace fb {

void register_gelu_op(OpRegistry& r);  // in elementwise.cpp

std::vector<int64_t> encode_chain(const std::vector<ChainInstr>& prog) {
  std::vector<int64_t> v;
  for (const ChainInstr& i : prog) v.insert(v.end(), {i.kind, i.fn, i.a, i.b});
  return v;
}

std::vector<ChainInstr> decode_chain(const std::vector<int64_t>& attr, int num_inputs) {
  if (attr.empty() || attr.size() % 4) throw Error("ElementwiseChain program is malformed");
  std::vector<ChainInstr> prog;
  for (size_t k = 0; k < attr.size(); k += 4) {
    ChainInstr in{int(attr[k]), int(attr[k + 1]), int(attr[k + 2]), int(attr[k + 3])};
    const int regs = num_inputs + int(prog.size());
    bool ok = (in.kind == 0 && in.fn >= 0 && in.fn < int(UnaryFn::Count)) ||
              (in.kind == 1 && in.fn >= 0 && in.fn < int(BinaryFn::Count));
    ok = ok && in.a >= 0 && in.a < regs && (in.kind == 0 || (in.b >= 0 && in.b < regs));
    if (!ok) throw Error("ElementwiseChain instruction " + std::to_string(k / 4) + " is malformed");
    prog.push_back(in);
  }
  return prog;
}

std::string describe_chain(const std::vector<ChainInstr>& prog) {
  std::string s;
  for (const ChainInstr& i : prog) {
    if (!s.empty()) s += "→";
    s += i.kind == 0 ? unary_op_type(UnaryFn(i.fn)) : binary_op_type(BinaryFn(i.fn));
  }
  return s;
}

namespace {

// ---- ElementwiseChain ----------------------------------------------------------------------
std::vector<ValueInfo> infer_chain(const ShapeContext& c) {
  Shape out;
  DType half = DType::Float32;  // the 16-bit type among the inputs, if any
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const DType t = c.in(i).dtype;
    if (t != DType::Float32 && !(is_half_type(t) && (half == DType::Float32 || half == t)))
      throw Error("ElementwiseChain takes float32 inputs and at most one 16-bit float type");
    if (is_half_type(t)) half = t;
    out = i == 0 ? c.in(i).shape : broadcast_shapes(out, c.in(i).shape);
  }
  decode_chain(c.node.attr_ints("program"), int(c.inputs.size()));
  return {ValueInfo{half, out, true}};
}

void compute_chain(OpContext& c) {
  const int n_in = int(c.inputs.size());
  const std::vector<ChainInstr> prog = decode_chain(c.node.attr_ints("program"), n_in);
  Tensor& out = c.out(0);
  std::vector<Shape> in_shapes;
  for (const Tensor* t : c.inputs) in_shapes.push_back(t->shape());
  BroadcastPlan plan(out.shape(), in_shapes);
  const int64_t inner = plan.inner();
  constexpr int64_t kBlock = 512;  // elements per register: stays in L1 across the chain
  const int n_regs = n_in + int(prog.size());
  // bf16/fp16 tensors are widened a block at a time into L1-resident buffers and the
  // result narrowed from one: the chain computes in float32 and moves 16-bit bytes.
  const bool half_out = is_half_type(out.dtype());
  float* po = half_out ? nullptr : out.data<float>();
  // The work items are the blocks of every row, so a chain over same-shape tensors (one
  // row of all the elements) is shared between the threads too; ~16k elements per task.
  const int64_t blocks_per_row = std::max<int64_t>(1, (inner + kBlock - 1) / kBlock);
  const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, std::min(inner, kBlock)));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, plan.rows() * blocks_per_row, grain),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      std::vector<float> scratch(size_t(prog.size() + n_in + 1) * kBlock);
                      float* const widened = scratch.data() + prog.size() * kBlock;  // n_in blocks
                      float* const result = widened + n_in * kBlock;
                      std::vector<const float*> reg(n_regs);
                      std::vector<int64_t> stride(n_regs);
                      for (int64_t item = r.begin(); item < r.end(); ++item) {
                        const int64_t row = item / blocks_per_row, j0 = (item % blocks_per_row) * kBlock;
                        {
                          const int64_t len = std::min(kBlock, inner - j0);
                          for (int i = 0; i < n_in; ++i) {
                            const Tensor& t = *c.inputs[i];
                            stride[i] = plan.inner_stride(i);
                            const int64_t at = plan.row_offset(i, row) + j0 * stride[i];
                            if (is_half_type(t.dtype())) {
                              float* w = widened + i * kBlock;
                              widen_16(t.dtype(), static_cast<const uint16_t*>(t.raw()) + at, w, stride[i] ? len : 1);
                              reg[i] = w;
                            } else {
                              reg[i] = t.data<float>() + at;
                            }
                          }
                          for (size_t k = 0; k < prog.size(); ++k) {
                            const ChainInstr& in = prog[k];
                            const int dst = n_in + int(k);
                            // The last instruction writes straight into the output (or the block to narrow).
                            float* o = k + 1 < prog.size() ? scratch.data() + k * kBlock
                                       : half_out          ? result
                                                           : po + row * inner + j0;
                            if (in.kind == 0) {
                              if (stride[in.a] == 0 && k + 1 < prog.size()) {
                                o[0] = unary_scalar(UnaryFn(in.fn), reg[in.a][0]);
                                stride[dst] = 0;
                              } else if (stride[in.a] == 0) {
                                const float v = unary_scalar(UnaryFn(in.fn), reg[in.a][0]);
                                for (int64_t e = 0; e < len; ++e) o[e] = v;
                                stride[dst] = 1;
                              } else {
                                apply_unary(UnaryFn(in.fn), reg[in.a], o, len);
                                stride[dst] = 1;
                              }
                            } else {
                              const bool both_scalar = stride[in.a] == 0 && stride[in.b] == 0;
                              apply_binary(BinaryFn(in.fn), reg[in.a], stride[in.a], reg[in.b], stride[in.b], o,
                                           both_scalar && k + 1 < prog.size() ? 1 : len);
                              stride[dst] = both_scalar && k + 1 < prog.size() ? 0 : 1;
                            }
                            reg[dst] = o;
                          }
                          if (half_out)
                            narrow_16(out.dtype(), result, static_cast<uint16_t*>(out.raw()) + row * inner + j0, len);
                        }
                      }
                    });
}

// ---- LayerNorm over the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta ---------
// AddLayerNorm(a, b, gamma?, beta?) -> y, sum?: the same on x = a + b (a residual), one pass
// over memory instead of two; the sum is written out only when a later layer reads it.
// In-place safe: y and sum may share memory with a or b, since row element j of the
// inputs is never read after element j of an output is written.
std::vector<ValueInfo> infer_layernorm_common(const ShapeContext& c, size_t first_affine) {
  const ValueInfo& x = c.in(0);
  if ((x.dtype != DType::Float32 && !is_half_type(x.dtype)) || x.shape.empty())
    throw Error(c.node.op_type + " takes a float32, bfloat16 or float16 tensor of rank >= 1");
  const int64_t h = x.shape.back();
  for (size_t i = first_affine; i < first_affine + 2; ++i)
    if (c.has_input(i) && shape_numel(c.in(i).shape) != h)
      throw Error(c.node.op_type + " scale/bias of shape " + shape_str(c.in(i).shape) + " does not match the last axis " +
                  std::to_string(h));
  return {ValueInfo{x.dtype, x.shape, true}};
}

std::vector<ValueInfo> infer_layernorm(const ShapeContext& c) { return infer_layernorm_common(c, 1); }

std::vector<ValueInfo> infer_add_layernorm(const ShapeContext& c) {
  std::vector<ValueInfo> r = infer_layernorm_common(c, 2);
  if (c.in(1).dtype != c.in(0).dtype || c.in(1).shape != c.in(0).shape)
    throw Error("AddLayerNorm adds tensors of one shape: " + shape_str(c.in(0).shape) + " and " + shape_str(c.in(1).shape));
  if (c.node.outputs.size() > 1) r.push_back(r[0]);  // the sum
  return r;
}

// One row of h: optionally x = a + b (into `sum`, or into y when the sum is not wanted),
// then y = LayerNorm(x), or with `rms` RMSNorm(x): x / sqrt(mean(x²) + eps) · gamma.
inline void layernorm_row(const float* xi, const float* bi, float* si, float* yo, int64_t h, float eps, const float* gamma,
                          const float* beta, bool rms) {
  if (bi) {
    if (!si) si = yo;
#pragma omp simd
    for (int64_t j = 0; j < h; ++j) si[j] = xi[j] + bi[j];
    xi = si;
  }
  float total = 0.f;
  if (!rms) {
#pragma omp simd reduction(+ : total)
    for (int64_t j = 0; j < h; ++j) total += xi[j];
  }
  const float mean = total / float(h);
  float sq = 0.f;
#pragma omp simd reduction(+ : sq)
  for (int64_t j = 0; j < h; ++j) sq += (xi[j] - mean) * (xi[j] - mean);
  const float inv = 1.f / std::sqrt(sq / float(h) + eps);
  if (gamma && beta) {
#pragma omp simd
    for (int64_t j = 0; j < h; ++j) yo[j] = (xi[j] - mean) * inv * gamma[j] + beta[j];
  } else {
    for (int64_t j = 0; j < h; ++j) {
      float v = (xi[j] - mean) * inv;
      if (gamma) v *= gamma[j];
      if (beta) v += beta[j];
      yo[j] = v;
    }
  }
}

// rows × h of a (+ b) -> y (and sum). float32 tensors are read and written in place;
// bf16/fp16 ones a row at a time through float32 buffers that stay in L1, so a 16-bit
// LayerNorm moves half the bytes and computes in float32.
void layernorm_rows(const Tensor& a, const Tensor* b, Tensor* sum, Tensor& y, float eps, const float* gamma,
                    const float* beta, bool rms) {
  const int64_t h = a.shape().back(), rows = h ? a.numel() / h : 0;
  const DType t = a.dtype();
  if (t == DType::Float32) {
    const float *pa = a.data<float>(), *pb = b ? b->data<float>() : nullptr;
    float *ps = sum ? sum->data<float>() : nullptr, *py = y.data<float>();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(h, 1))),
                      [&](const tbb::blocked_range<int64_t>& r) {
                        for (int64_t row = r.begin(); row < r.end(); ++row)
                          layernorm_row(pa + row * h, pb ? pb + row * h : nullptr, ps ? ps + row * h : nullptr,
                                        py + row * h, h, eps, gamma, beta, rms);
                      });
    return;
  }
  // b may stay float32 where it is a constant (ViT's position embedding): precision
  // lowering converts no initializer but weights.
  if (!is_half_type(t) || (b && b->dtype() != t && b->dtype() != DType::Float32) || y.dtype() != t || (sum && sum->dtype() != t))
    throw Error("LayerNorm tensors must share one float type (the residual may be float32)");
  const auto* pa = static_cast<const uint16_t*>(a.raw());
  const bool b_wide = b && b->dtype() == DType::Float32;
  const auto* pb = b && !b_wide ? static_cast<const uint16_t*>(b->raw()) : nullptr;
  const float* pbw = b_wide ? b->data<float>() : nullptr;
  auto* ps = sum ? static_cast<uint16_t*>(sum->raw()) : nullptr;
  auto* py = static_cast<uint16_t*>(y.raw());
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(h, 1))),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      std::vector<float> buf(size_t(4 * h));
                      float *fa = buf.data(), *fb = fa + h, *fs = fb + h, *fy = fs + h;
                      for (int64_t row = r.begin(); row < r.end(); ++row) {
                        widen_16(t, pa + row * h, fa, h);
                        if (pb) widen_16(t, pb + row * h, fb, h);
                        const float* row_b = pb ? fb : pbw ? pbw + row * h : nullptr;
                        layernorm_row(fa, row_b, ps ? fs : nullptr, fy, h, eps, gamma, beta, rms);
                        narrow_16(t, fy, py + row * h, h);
                        if (ps) narrow_16(t, fs, ps + row * h, h);
                      }
                    });
}

// Attribute rms = 1: RMSNorm (no mean subtracted, no beta).
void compute_layernorm(OpContext& c) {
  layernorm_rows(c.in(0), nullptr, nullptr, c.out(0), c.node.attr_float("epsilon", 1e-5f),
                 c.has_input(1) ? c.in(1).data<float>() : nullptr, c.has_input(2) ? c.in(2).data<float>() : nullptr,
                 c.node.attr_int("rms", 0) != 0);
}

void compute_add_layernorm(OpContext& c) {
  Tensor* sum = c.outputs.size() > 1 && c.outputs[1] ? c.outputs[1] : nullptr;
  layernorm_rows(c.in(0), &c.in(1), sum, c.out(0), c.node.attr_float("epsilon", 1e-5f),
                 c.has_input(2) ? c.in(2).data<float>() : nullptr, c.has_input(3) ? c.in(3).data<float>() : nullptr,
                 c.node.attr_int("rms", 0) != 0);
}

std::vector<ValueInfo> infer_channel_shuffle(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  const int64_t groups = c.node.attr_int("groups", 0);
  if (x.shape.size() != 4 || groups < 1 || x.shape[1] % groups)
    throw Error("ChannelShuffle takes [N, C, H, W] with C divisible by groups (" + std::to_string(groups) + "), not " +
                shape_str(x.shape));
  return {ValueInfo{x.dtype, x.shape, true}};
}

// Output channel k * groups + j is input channel j * (C / groups) + k: whole planes copied,
// any element type.
void compute_channel_shuffle(OpContext& c) {
  const Tensor& x = c.in(0);
  Tensor& y = c.out(0);
  const Shape& s = x.shape();
  const int64_t groups = c.node.attr_int("groups", 1), per_group = s[1] / groups;
  const size_t plane = size_t(s[2] * s[3]) * dtype_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw());
  char* dst = static_cast<char*>(y.raw());
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, s[0] * s[1]), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t out = r.begin(); out < r.end(); ++out) {
      const int64_t b = out / s[1], ch = out % s[1];
      const int64_t in = b * s[1] + (ch % groups) * per_group + ch / groups;
      std::memcpy(dst + size_t(out) * plane, src + size_t(in) * plane, plane);
    }
  });
}

// ---- ChannelAffine(x [N, C, ...], scale [C], shift [C]) -> x · scale[c] + shift[c] -------
// An inference BatchNormalization that follows no convolution (a DenseNet's pre-activation),
// with its Relu when attribute activation = "relu".
std::vector<ValueInfo> infer_channel_affine(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  if (x.dtype != DType::Float32 || x.shape.size() < 2)
    throw Error(c.node.describe() + ": ChannelAffine takes a float32 tensor [N, C, ...], not " + shape_str(x.shape));
  for (size_t i = 1; i <= 2; ++i)
    if (c.in(i).dtype != DType::Float32 || shape_numel(c.in(i).shape) != x.shape[1])
      throw Error(c.node.describe() + ": ChannelAffine's " + (i == 1 ? "scale " : "shift ") + shape_str(c.in(i).shape) +
                  " must have one float per channel (" + std::to_string(x.shape[1]) + ")");
  const std::string act = c.node.attr_string("activation", "");
  if (!act.empty() && act != "relu") throw Error(c.node.describe() + ": unknown activation '" + act + "'");
  return {ValueInfo{DType::Float32, x.shape, true}};
}

void compute_channel_affine(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t ch = x.shape()[1], planes = x.shape()[0] * ch, inner = planes ? x.numel() / planes : 0;
  const float *scale = c.in(1).data<float>(), *shift = c.in(2).data<float>(), *in = x.data<float>();
  float* out = c.out(0).data<float>();
  const float floor = c.node.attr_string("activation", "") == "relu" ? 0.f : -INFINITY;
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, planes, std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1))),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t p = r.begin(); p < r.end(); ++p) {
                        const float a = scale[p % ch], b = shift[p % ch];
                        const float* xi = in + p * inner;
                        float* yo = out + p * inner;
#pragma omp simd
                        for (int64_t i = 0; i < inner; ++i) {
                          const float v = xi[i] * a + b;
                          yo[i] = v > floor ? v : floor;
                        }
                      }
                    });
}

}  // namespace

void register_fused_ops(OpRegistry& r) {
  register_gelu_op(r);
  // In place: a chain's last instruction writes output block [j0, j0+len) from input
  // blocks at the same offsets, after every earlier read of them; the LayerNorms read a
  // row element before writing it (layernorm_rows).
  r.add(OpDef{"fusebench", "ElementwiseChain", infer_chain, compute_chain, true, false, /*in_place=*/true});
  r.add(OpDef{"fusebench", "LayerNorm", infer_layernorm, compute_layernorm, false, false, /*in_place=*/true});
  r.add(OpDef{"fusebench", "AddLayerNorm", infer_add_layernorm, compute_add_layernorm, false, false, /*in_place=*/true});
  r.add(OpDef{"fusebench", "ChannelShuffle", infer_channel_shuffle, compute_channel_shuffle});
  r.add(OpDef{"fusebench", "ChannelAffine", infer_channel_affine, compute_channel_affine, false, false, /*in_place=*/true});
}

}  // namespace fb
