// MatMul, Gemm and the engine's FusedMatMul (defined in engine/ops/matmul_ops.cpp): all
// run one oneDNN matmul primitive.
#include "engine/backend/cpu/matmul.h"

#include <tbb/parallel_for.h>

#include "engine/ops/broadcast.h"
#include "engine/backend/cpu/dnnl_context.h"
#include "engine/backend/cpu/shared_weights.h"
#include "engine/ops/bound_kernels.h"
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
memory::dims to_dims(const Shape& s) { return memory::dims(s.begin(), s.end()); }
}  // namespace

struct MatMulKernel::Impl {
  MatMulShapes p;
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
  im.p = matmul_shapes(spec.a, spec.b, spec.trans_a, spec.trans_b);
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

void compute_matmul(OpContext& c) {
  require_float(c.in(0), c.node);
  require_float(c.in(1), c.node);
  MatMulKernel k(MatMulSpec{c.in(0).shape(), c.in(1).shape()});
  k.run(c.in(0).data<float>(), c.in(1).data<float>(), nullptr, c.out(0).data<float>());
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

void compute_fused_matmul(OpContext& c) {
  MatMulKernel k(fused_matmul_spec(c.node, c.in(0).shape(), c.in(1).shape(), c.has_input(2)));
  k.run(c.in(0).data<float>(), c.in(1).data<float>(), c.has_input(2) ? c.in(2).data<float>() : nullptr,
        c.out(0).data<float>(), c.has_input(3) ? c.in(3).data<float>() : nullptr);
}

void run_float_matmul(const MatMulSpec& spec, const float* a, const float* b, const float* bias, float* out) {
  MatMulKernel(spec).run(a, b, bias, out);
}

}  // namespace

void bind_cpu_matmul_kernels() {
  bind_op_kernel("", "MatMul", compute_matmul);
  bind_op_kernel("", "Gemm", compute_gemm);
  bind_op_kernel("fusebench", "FusedMatMul", compute_fused_matmul);
  bind_float_matmul(run_float_matmul);
}

}  // namespace fb
