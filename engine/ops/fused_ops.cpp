// The engine's fused ops (domain "fusebench"): LayerNorm, Gelu and ElementwiseChain
// (FusedMatMul lives with the matmul kernels). Each one replaces a subgraph that a pass
// in engine/passes/ matched; their kernels are the single-pass forms of that subgraph.
#include <tbb/parallel_for.h>

#include <cmath>

#include "engine/ops/broadcast.h"
#include "engine/ops/elementwise_chain.h"
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
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    if (c.in(i).dtype != DType::Float32) throw Error("ElementwiseChain takes float32 inputs only");
    out = i == 0 ? c.in(i).shape : broadcast_shapes(out, c.in(i).shape);
  }
  decode_chain(c.node.attr_ints("program"), int(c.inputs.size()));
  return {ValueInfo{DType::Float32, out, true}};
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
  float* po = out.data<float>();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, plan.rows(), std::max<int64_t>(1, 16384 / std::max<int64_t>(inner, 1))),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      std::vector<float> scratch(size_t(prog.size()) * kBlock);
                      std::vector<const float*> reg(n_regs);
                      std::vector<int64_t> stride(n_regs);
                      for (int64_t row = r.begin(); row < r.end(); ++row) {
                        for (int64_t j0 = 0; j0 < inner; j0 += kBlock) {
                          const int64_t len = std::min(kBlock, inner - j0);
                          for (int i = 0; i < n_in; ++i) {
                            stride[i] = plan.inner_stride(i);
                            reg[i] = c.inputs[i]->data<float>() + plan.row_offset(i, row) + j0 * stride[i];
                          }
                          for (size_t k = 0; k < prog.size(); ++k) {
                            const ChainInstr& in = prog[k];
                            const int dst = n_in + int(k);
                            // The last instruction writes straight into the output.
                            float* o = k + 1 == prog.size() ? po + row * inner + j0 : scratch.data() + k * kBlock;
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
                        }
                      }
                    });
}

// ---- LayerNorm over the last axis: y = (x - mean) / sqrt(var + eps) * gamma + beta ---------
std::vector<ValueInfo> infer_layernorm(const ShapeContext& c) {
  const ValueInfo& x = c.in(0);
  if (x.dtype != DType::Float32 || x.shape.empty()) throw Error("LayerNorm takes a float32 tensor of rank >= 1");
  const int64_t h = x.shape.back();
  for (size_t i = 1; i < 3; ++i)
    if (c.has_input(i) && shape_numel(c.in(i).shape) != h)
      throw Error("LayerNorm scale/bias of shape " + shape_str(c.in(i).shape) + " does not match the last axis " + std::to_string(h));
  return {ValueInfo{DType::Float32, x.shape, true}};
}

void compute_layernorm(OpContext& c) {
  const Tensor& x = c.in(0);
  const int64_t h = x.shape().back();
  const int64_t rows = h ? x.numel() / h : 0;
  const float eps = c.node.attr_float("epsilon", 1e-5f);
  const float* in = x.data<float>();
  const float* gamma = c.has_input(1) ? c.in(1).data<float>() : nullptr;
  const float* beta = c.has_input(2) ? c.in(2).data<float>() : nullptr;
  float* out = c.out(0).data<float>();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, rows, std::max<int64_t>(1, 4096 / std::max<int64_t>(h, 1))),
                    [&](const tbb::blocked_range<int64_t>& r) {
                      for (int64_t row = r.begin(); row < r.end(); ++row) {
                        const float* xi = in + row * h;
                        float* yo = out + row * h;
                        float sum = 0.f;
#pragma omp simd reduction(+ : sum)
                        for (int64_t j = 0; j < h; ++j) sum += xi[j];
                        const float mean = sum / float(h);
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
                    });
}

}  // namespace

void register_fused_ops(OpRegistry& r) {
  register_gelu_op(r);
  r.add(OpDef{"fusebench", "ElementwiseChain", infer_chain, compute_chain, true, false});
  r.add(OpDef{"fusebench", "LayerNorm", infer_layernorm, compute_layernorm});
}

}  // namespace fb
