// MatMul, Gemm and the engine's FusedMatMul: all run one oneDNN matmul primitive.
#include "engine/backend/cpu/matmul.h"

#include <tbb/parallel_for.h>

#include "engine/ops/broadcast.h"
#include "engine/backend/cpu/dnnl_context.h"
#include "engine/backend/cpu/shared_weights.h"
#include "engine/ops/op_registry.h"
#include "engine/ops/fused_activation.h"

namespace fb {

using dnnl::memory;

void append_matmul_activation(dnnl::post_ops& po, ActivationKind a) {
  switch (a) {
    case ActivationKind::None: return;
    case ActivationKind::Relu: return po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    case ActivationKind::Gelu: return po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_erf, 0.f, 0.f);
    case ActivationKind::GeluTanh: return po.append_eltwise(1.f, dnnl::algorithm::eltwise_gelu_tanh, 0.f, 0.f);
    case ActivationKind::Silu: return po.append_eltwise(1.f, dnnl::algorithm::eltwise_swish, 1.f, 0.f);  // x·sigmoid(1·x)
    default: throw Error(std::string("no matmul epilogue for activation '") + activation_kind_name(a) + "'");
  }
}

namespace {
// Both operands promoted to a common rank >= 2 (1-D operands become [1,K] / [K,1]).
struct Promoted {
  Shape a, b, out;           // rank r each, out unsqueezed
  Shape out_final;           // numpy result shape
  int64_t m, k, n;
};

Promoted promote(const Shape& a0, const Shape& b0, bool ta, bool tb) {
  if (a0.empty() || b0.empty()) throw Error("MatMul operands must have rank >= 1");
  if ((ta && a0.size() != 2) || (tb && b0.size() != 2)) throw Error("transposed operands must be 2-D");
  Shape a = a0, b = b0;
  bool a_vec = a.size() == 1, b_vec = b.size() == 1;
  if (a_vec) a.insert(a.begin(), 1);
  if (b_vec) b.push_back(1);
  if (ta) std::swap(a[0], a[1]);
  if (tb) std::swap(b[0], b[1]);
  size_t r = std::max(a.size(), b.size());
  while (a.size() < r) a.insert(a.begin(), 1);
  while (b.size() < r) b.insert(b.begin(), 1);
  Promoted p;
  p.m = a[r - 2];
  p.k = a[r - 1];
  p.n = b[r - 1];
  if (b[r - 2] != p.k)
    throw Error("MatMul inner dimensions differ: " + shape_str(a0) + " x " + shape_str(b0));
  Shape batch_a(a.begin(), a.end() - 2), batch_b(b.begin(), b.end() - 2);
  Shape batch = broadcast_shapes(batch_a, batch_b);
  p.out = batch;
  p.out.push_back(p.m);
  p.out.push_back(p.n);
  p.out_final = batch;
  if (!a_vec) p.out_final.push_back(p.m);
  if (!b_vec) p.out_final.push_back(p.n);
  p.a = a;
  p.b = b;
  return p;
}

memory::dims to_dims(const Shape& s) { return memory::dims(s.begin(), s.end()); }
}  // namespace

Shape matmul_output_shape(const Shape& a, const Shape& b, bool ta, bool tb) {
  return promote(a, b, ta, tb).out_final;
}

struct MatMulKernel::Impl {
  Promoted p;
  double flops = 0;
  dnnl::matmul prim;
  memory::desc a_md, b_md, bias_md, out_md;
  bool has_bias = false;
  // Created once; run() only swaps their data pointers, so the timed loop allocates nothing.
  memory ma, mb, mbias, mo, mmul;
  std::unordered_map<int, memory> args;
  // A constant b in the primitive's own layout (MatMulSpec::constant_b), packed on the first
  // run and shared with the layers that pack the same constant alike (shared_weights.h).
  memory::desc packed_md;
  std::shared_ptr<const memory> packed_b;
  bool b_packed = false;
  std::string impl;
};

MatMulKernel::MatMulKernel(const MatMulSpec& spec) : impl_(std::make_unique<Impl>()) {
  Impl& im = *impl_;
  im.p = promote(spec.a, spec.b, spec.trans_a, spec.trans_b);
  im.flops = 2.0 * double(shape_numel(im.p.out)) * double(im.p.k);
  // A [..., M, K] product with weights of rank 2 is one [rows, K] x [K, N] product: oneDNN
  // then runs one tall matrix instead of a batch of short ones sharing the weights
  // (ConvNeXt's [1,7,7,768] x [768,3072] was 7 products of 7 rows: 3.2 ms at 72 GFLOP/s).
  Shape a_dims = im.p.a, b_dims = im.p.b, out_dims = im.p.out;
  bool b_batched = false;
  for (size_t i = 0; i + 2 < b_dims.size(); ++i) b_batched = b_batched || b_dims[i] != 1;
  if (!spec.trans_a && a_dims.size() > 2 && !b_batched) {
    const int64_t rows = shape_numel(a_dims) / std::max<int64_t>(im.p.k, 1);
    a_dims = {rows, im.p.k};
    b_dims = Shape(b_dims.end() - 2, b_dims.end());
    out_dims = {rows, im.p.n};
  }
  const size_t r = out_dims.size();
  // Transposed 2-D operands are described by strides, so no copy is made.
  using dt = memory::data_type;
  const dt act = spec.bf16 ? dt::bf16 : dt::f32;
  const dt b_given = spec.b_type == DType::BFloat16 ? dt::bf16 : dt::f32;
  if ((spec.b_type != DType::Float32 && spec.b_type != DType::BFloat16) || (!spec.bf16 && b_given != dt::f32) ||
      (spec.bf16 && b_given == dt::f32 && !spec.constant_b))
    throw Error(std::string("MatMul: no kernel for ") + (spec.bf16 ? "bf16" : "float32") + " activations times " +
                (spec.constant_b ? "constant " : "") + dtype_name(spec.b_type) + " weights");
  auto md_for = [&](const Shape& dims, bool transposed, dt type) {
    memory::dims strides = transposed ? memory::dims{1, dims[0]} : to_dims(shape_strides(dims));
    return memory::desc(to_dims(dims), type, strides);
  };
  if (r > 6) throw Error("MatMul of rank " + std::to_string(r) + " is not supported (max 6)");
  im.a_md = md_for(a_dims, spec.trans_a, act);
  im.b_md = md_for(b_dims, spec.trans_b, b_given);
  im.out_md = md_for(out_dims, false, act);
  im.has_bias = spec.has_bias;
  if (spec.has_bias) {
    Shape bd(r, 1);
    bd[r - 1] = im.p.n;
    im.bias_md = md_for(bd, false, dt::f32);
  }
  dnnl::primitive_attr attr;
  if (spec.alpha != 1.f) attr.set_output_scales(0, {spec.alpha});
  dnnl::post_ops po;
  append_matmul_activation(po, spec.activation);
  const int multiplier_post_op = po.len();
  if (spec.has_multiplier) po.append_binary(dnnl::algorithm::binary_mul, im.out_md);
  attr.set_post_ops(po);
  try {
    auto& eng = dnnl_cpu_engine();
    const memory::desc b_any(im.b_md.dims(), act, memory::format_tag::any);
    const memory::desc& b_wanted = spec.constant_b ? b_any : im.b_md;
    auto desc = spec.has_bias ? dnnl::matmul::desc(im.a_md, b_wanted, im.bias_md, im.out_md)
                              : dnnl::matmul::desc(im.a_md, b_wanted, im.out_md);
    const dnnl::matmul::primitive_desc pd(desc, attr, eng);
    im.prim = dnnl::matmul(pd);
    im.impl = pd.impl_info_str();
    im.ma = memory(im.a_md, eng, DNNL_MEMORY_NONE);
    im.mb = memory(im.b_md, eng, DNNL_MEMORY_NONE);
    im.mo = memory(im.out_md, eng, DNNL_MEMORY_NONE);
    im.b_packed = pd.weights_desc() != im.b_md;
    if (im.b_packed) im.packed_md = pd.weights_desc();
    im.args = {{DNNL_ARG_SRC, im.ma}, {DNNL_ARG_WEIGHTS, im.mb}, {DNNL_ARG_DST, im.mo}};  // packed b: set on the first run
    if (spec.has_bias) {
      im.mbias = memory(im.bias_md, eng, DNNL_MEMORY_NONE);
      im.args.emplace(DNNL_ARG_BIAS, im.mbias);
    }
    if (spec.has_multiplier) {
      im.mmul = memory(im.out_md, eng, DNNL_MEMORY_NONE);
      im.args.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(multiplier_post_op) | DNNL_ARG_SRC_1, im.mmul);
    }
  } catch (const dnnl::error& e) {
    throw Error(std::string("oneDNN could not create a matmul for ") + shape_str(spec.a) + " x " +
                shape_str(spec.b) + ": " + e.what());
  }
}

MatMulKernel::~MatMulKernel() = default;
MatMulKernel::MatMulKernel(MatMulKernel&&) noexcept = default;
const Shape& MatMulKernel::output_shape() const { return impl_->p.out_final; }
double MatMulKernel::flops() const { return impl_->flops; }
const std::string& MatMulKernel::impl_info() const { return impl_->impl; }

void MatMulKernel::run(const void* a, const void* b, const float* bias, void* out, const void* multiplier) {
  Impl& im = *impl_;
  if (im.mmul) im.mmul.set_data_handle(const_cast<void*>(multiplier));
  im.ma.set_data_handle(const_cast<void*>(a));
  im.mb.set_data_handle(const_cast<void*>(b));
  im.mo.set_data_handle(out);
  if (im.has_bias) im.mbias.set_data_handle(const_cast<float*>(bias));
  if (im.b_packed && !im.packed_b) {
    im.packed_b = shared_reordered_weights(b, im.b_md, im.packed_md);
    im.args[DNNL_ARG_WEIGHTS] = *im.packed_b;
  }
  im.prim.execute(dnnl_cpu_stream(), im.args);
  dnnl_cpu_stream().wait();
}

namespace {

void require_float(const Tensor& t, const Node& n) {
  if (t.dtype() != DType::Float32)
    throw Error(n.describe() + ": input type " + dtype_name(t.dtype()) + " is not supported (float32 only)");
}

std::vector<ValueInfo> infer_matmul(const ShapeContext& c) {
  return {ValueInfo{c.in(0).dtype, matmul_output_shape(c.in(0).shape, c.in(1).shape), true}};
}

void compute_matmul(OpContext& c) {
  require_float(c.in(0), c.node);
  require_float(c.in(1), c.node);
  MatMulKernel k(MatMulSpec{c.in(0).shape(), c.in(1).shape()});
  k.run(c.in(0).data<float>(), c.in(1).data<float>(), nullptr, c.out(0).data<float>());
}

std::vector<ValueInfo> infer_gemm(const ShapeContext& c) {
  const Node& n = c.node;
  Shape out = matmul_output_shape(c.in(0).shape, c.in(1).shape, n.attr_int("transA", 0), n.attr_int("transB", 0));
  if (c.in(0).shape.size() != 2 || c.in(1).shape.size() != 2) throw Error("Gemm operands must be 2-D");
  if (c.has_input(2)) broadcast_shapes(c.in(2).shape, out);  // C must broadcast to [M, N]
  return {ValueInfo{c.in(0).dtype, out, true}};
}

void compute_gemm(OpContext& c) {
  const Node& n = c.node;
  require_float(c.in(0), n);
  require_float(c.in(1), n);
  MatMulSpec s{c.in(0).shape(), c.in(1).shape(), n.attr_int("transA", 0) != 0, n.attr_int("transB", 0) != 0};
  s.alpha = n.attr_float("alpha", 1.f);
  const float beta = n.attr_float("beta", 1.f);
  Tensor& out = c.out(0);
  MatMulKernel(s).run(c.in(0).data<float>(), c.in(1).data<float>(), nullptr, out.data<float>());
  if (!c.has_input(2) || beta == 0.f) return;
  const Tensor& cc = c.in(2);
  require_float(cc, n);
  BroadcastPlan plan(out.shape(), {out.shape(), cc.shape()});
  float* po = out.data<float>();
  const float* pc = cc.data<float>();
  for (int64_t row = 0; row < plan.rows(); ++row) {
    float* ro = po + row * plan.inner();
    const float* rc = pc + plan.row_offset(1, row);
    const int64_t sc = plan.inner_stride(1);
    for (int64_t i = 0; i < plan.inner(); ++i) ro[i] += beta * rc[i * sc];
  }
}

// fusebench.FusedMatMul(A, B, bias?) with attributes transA, transB, alpha, activation.
std::vector<ValueInfo> infer_fused_matmul(const ShapeContext& c) {
  const Node& n = c.node;
  Shape out = matmul_output_shape(c.in(0).shape, c.in(1).shape, n.attr_int("transA", 0), n.attr_int("transB", 0));
  if (c.has_input(2) && shape_numel(c.in(2).shape) != out.back())
    throw Error("bias of shape " + shape_str(c.in(2).shape) + " does not match N = " + std::to_string(out.back()));
  if (c.has_input(3) && (c.in(3).shape != out || c.in(3).dtype != DType::Float32))
    throw Error("multiplier " + shape_str(c.in(3).shape) + " must be a float32 tensor of the output's shape " + shape_str(out));
  return {ValueInfo{DType::Float32, out, true}};
}

}  // namespace

MatMulSpec fused_matmul_spec(const Node& n, const Shape& a, const Shape& b, bool has_bias) {
  MatMulSpec s{a, b, n.attr_int("transA", 0) != 0, n.attr_int("transB", 0) != 0, has_bias};
  s.alpha = n.attr_float("alpha", 1.f);
  s.activation = fused_activation_of(n).kind;
  s.has_multiplier = n.inputs.size() > 3 && !n.inputs[3].empty();
  return s;
}

namespace {
void compute_fused_matmul(OpContext& c) {
  MatMulKernel k(fused_matmul_spec(c.node, c.in(0).shape(), c.in(1).shape(), c.has_input(2)));
  k.run(c.in(0).data<float>(), c.in(1).data<float>(), c.has_input(2) ? c.in(2).data<float>() : nullptr,
        c.out(0).data<float>(), c.has_input(3) ? c.in(3).data<float>() : nullptr);
}
}  // namespace

void register_matmul_ops(OpRegistry& r) {
  r.add(OpDef{"", "MatMul", infer_matmul, compute_matmul});
  r.add(OpDef{"", "Gemm", infer_gemm, compute_gemm});
  r.add(OpDef{"fusebench", "FusedMatMul", infer_fused_matmul, compute_fused_matmul});
}

}  // namespace fb
