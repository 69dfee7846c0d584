// Matrix products on the GPU: MatMul, Gemm and fusebench.FusedMatMul on cuBLASLt (its
// bias and ReLU epilogues; what it lacks in our own epilogue kernel), and
// fusebench.Attention fused in one kernel (16-bit) or as two batched cuBLAS products
// around a masked softmax kernel.
//
// Row-major ONNX tensors meet column-major BLAS by the usual identity: C = A·B in row
// major is Cᵀ = Bᵀ·Aᵀ in column major, and a row-major matrix read column-major is its
// transpose. So every call below passes B first and computes the output transposed.
// float32 layers compute in full fp32 (no TF32: CUBLAS_COMPUTE_32F, pedantic math) unless
// they are tf32 layers (CUBLAS_COMPUTE_32F_FAST_TF32); fp16/bf16 layers take 16-bit tensors and accumulate in fp32, as PyTorch does.
#include <algorithm>
#include <optional>

#include "engine/backend/cuda/attention_kernels.h"
#include "engine/backend/cuda/epilogue_kernels.h"
#include "engine/backend/cuda/lt_matmul.h"
#include "engine/ops/fused_activation.h"

namespace fb::cuda {

namespace {

PrecisionSet float_precisions(const Node&) { return {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16}; }

// The batch of a product: A's and B's leading dims broadcast to the output's. Each operand's
// batch is either the output's whole batch (dense) or absent/all ones (stride 0); a product
// whose batch broadcasts otherwise ([2,1]·[1,3]) is refused, naming the node.
void plan_batch(const Node& node, const Shape& a, const Shape& b, const Shape& out, Product& p) {
  const size_t out_batch_dims = out.size() - 2;
  int64_t batch = 1;
  for (size_t i = 0; i < out_batch_dims; ++i) batch *= out[i];
  auto stride_of = [&](const Shape& s, int64_t matrix) -> int64_t {
    int64_t own = 1;
    for (size_t i = 0; i + 2 < s.size(); ++i) own *= s[i];
    if (own == 1) return 0;
    if (own == batch && s.size() == out.size()) return matrix;
    throw Error(node.describe() + ": operand " + shape_str(s) + " broadcasts its batch in a way the CUDA backend does not run");
  };
  p.batch = batch;
  p.stride_a = stride_of(a, p.m * p.k);
  p.stride_b = stride_of(b, p.k * p.n);
}

// MatMul, Gemm, FusedMatMul.
class MatMulLayer final : public CudaLayer {
 public:
  MatMulLayer(const LayerRequest& r, const CudaContext& ctx) : CudaLayer(ctx) {
    const Node& n = r.node;
    y_ = r.outputs[0];
    const Elem e = elem_of(*y_);
    const DType t = y_->dtype();
    a_ = input_as(r, 0, t, a_keep_);
    b_ = input_as(r, 1, t, b_keep_);
    const Tensor& at = *r.inputs[0];
    const Tensor& bt = *r.inputs[1];
    const bool gemm = n.domain.empty() && n.op_type == "Gemm";
    const bool fused = n.domain == "fusebench";
    Product p;
    p.elem = e;
    p.trans_a = (gemm || fused) && n.attr_int("transA", 0) != 0;
    p.trans_b = (gemm || fused) && n.attr_int("transB", 0) != 0;
    p.alpha = (gemm || fused) ? n.attr_float("alpha", 1.f) : 1.f;
    // Promote 1-D operands as ONNX MatMul does: [K] is [1, K] on the left, [K, 1] on the right.
    Shape as = at.shape(), bs = bt.shape();
    if (as.size() == 1) as.insert(as.begin(), 1);
    if (bs.size() == 1) bs.push_back(1);
    p.m = p.trans_a ? as[as.size() - 1] : as[as.size() - 2];
    p.k = p.trans_a ? as[as.size() - 2] : as[as.size() - 1];
    p.n = p.trans_b ? bs[bs.size() - 2] : bs[bs.size() - 1];
    Shape out = y_->shape();
    if (at.shape().size() == 1) out.insert(out.end() - (bt.shape().size() == 1 ? 0 : 1), 1);
    if (bt.shape().size() == 1) out.push_back(1);
    if (bs.size() == 2 && !p.trans_a) {
      // Weights shared by every row: the batch folds into M, one plain product.
      for (size_t i = 0; i + 2 < as.size(); ++i) p.m *= as[i];
    } else {
      plan_batch(n, as, bs, out, p);
    }
    Epilogue& ep = epilogue_;
    ep.outer = y_->numel() / std::max<int64_t>(p.n, 1);
    ep.channels = p.n;
    const FusedActivation fa = fused ? fused_activation_of(n) : FusedActivation{};
    ActivationKind act = fa.kind;
    ep.lo = fa.lo, ep.hi = fa.hi;
    const Tensor* bias = fused && r.inputs.size() > 2 ? r.inputs[2] : nullptr;
    if (bias) {
      if (bias->numel() != p.n)
        throw Error(n.describe() + ": bias " + shape_str(bias->shape()) + " must have N = " + std::to_string(p.n) + " elements");
      // In the layer's type (cuBLASLt's bias epilogue reads D's); cuBLASLt's epilogue when
      // the whole product is one batch, ours otherwise.
      const void* b = input_as(r, 2, t, bias_keep_);
      if (p.batch == 1) p.bias = b, p.bias_elem = e;
      else ep.bias = b, ep.bias_elem = e;
    }
    if (act == ActivationKind::Relu && p.batch == 1) p.relu = true, act = ActivationKind::None;
    ep.act = act;
    if (fused && r.inputs.size() > 3 && r.inputs[3]) ep.multiplier = input_as(r, 3, t, multiplier_keep_);
    if (gemm && r.inputs.size() > 2 && r.inputs[2] && n.attr_float("beta", 1.f) != 0.f) {
      const Tensor& c = *r.inputs[2];
      const Shape& cs = c.shape();
      if (cs.size() > 2) throw Error(n.describe() + ": C " + shape_str(cs) + " must broadcast to [M, N]");
      const int64_t rows = cs.size() == 2 ? cs[0] : 1, cols = cs.empty() ? 1 : cs.back();
      ep.c = input_as(r, 2, t, bias_keep_);
      ep.c_elem = e;
      ep.c_outer_stride = rows == 1 ? 0 : cols;
      ep.c_channel_stride = cols == 1 ? 0 : 1;
      ep.beta = n.attr_float("beta", 1.f);
    }
    epilogue_needed_ = ep.bias || ep.act != ActivationKind::None || ep.multiplier || ep.c;
    lt_ = std::make_unique<LtMatmul>(p, ctx, n);
    const bool timed = r.time_algorithms && lt_->time_algorithms(a_, b_, y_->raw(), r.cuda_graph);
    flops_ = 2.0 * double(p.batch) * double(p.m) * double(p.n) * double(p.k);
    kernel_ = std::string("cublasLt.matmul") + (timed ? "[algo " + std::to_string(lt_->algorithm_id()) + ", timed]" : "") +
              (p.bias ? "+bias" : "") + (p.relu ? "+relu" : "") +
              (epilogue_needed_ ? "+epilogue" : "") + kernel_suffix(e, n.precision);
  }
  void run() override {
    lt_->run(a_, b_, y_->raw());
    if (epilogue_needed_) launch_epilogue(elem_of(*y_), y_->raw(), epilogue_, ctx_.stream);
  }
  std::string kernel() const override { return kernel_; }
  double flops() const override { return flops_; }

 private:
  const void *a_, *b_;  // the operands in the layer's type
  DeviceMemory a_keep_, b_keep_, bias_keep_, multiplier_keep_;  // constants converted to it
  Tensor* y_;
  std::unique_ptr<LtMatmul> lt_;
  Epilogue epilogue_;
  bool epilogue_needed_ = false;
  double flops_ = 0;
  std::string kernel_;
};

// fusebench.Attention(q, k, v[, mask]): q [B, Sq, H·D], k and v [B, Sk, H·D], heads H,
// scale; the mask (float32, rank 4) broadcasts to the scores [B, H, Sq, Sk]. 16-bit layers
// whose head dim the tensor cores' tiles divide run fused (attention_kernels.h: the scores
// never leave the chip); the rest as two batched cuBLAS products around a masked softmax
// kernel, scores in float32, probabilities in the layer's type for the second product.
class AttentionLayer final : public CudaLayer {
 public:
  AttentionLayer(const LayerRequest& r, const CudaContext& ctx) : CudaLayer(ctx) {
    const Node& n = r.node;
    q_ = r.inputs[0], k_ = r.inputs[1], v_ = r.inputs[2], y_ = r.outputs[0];
    mask_ = r.inputs.size() > 3 ? r.inputs[3] : nullptr;
    elem_ = elem_of(*y_);
    heads_ = n.attr_int("heads", 0);
    scale_ = n.attr_float("scale", 1.f);
    const Shape& qs = q_->shape();
    const Shape& ks = k_->shape();
    if (qs.size() != 3 || ks.size() != 3 || heads_ <= 0 || qs[2] % heads_)
      throw Error(n.describe() + ": q " + shape_str(qs) + " must be [B, S, heads·dim] with heads " + std::to_string(heads_));
    b_ = qs[0], sq_ = qs[1], sk_ = ks[1], hidden_ = qs[2], d_ = hidden_ / heads_;
    if (mask_) {
      if (mask_->rank() != 4) throw Error(n.describe() + ": the mask " + shape_str(mask_->shape()) + " must be of rank 4");
      mask_elem_ = elem_of(*mask_);
      const Shape& m = mask_->shape();
      const int64_t full[4] = {b_, heads_, sq_, sk_};
      int64_t stride = 1, st[4];
      for (int i = 3; i >= 0; --i) {
        if (m[size_t(i)] != 1 && m[size_t(i)] != full[i])
          throw Error(n.describe() + ": mask " + shape_str(m) + " does not broadcast to the scores");
        st[i] = m[size_t(i)] == 1 ? 0 : stride;
        stride *= m[size_t(i)];
      }
      ms_ = MaskStrides{st[0], st[1], st[2], st[3]};
    }
    if (flash_attention_runs(elem_, d_, b_, heads_, sq_, ctx.multiprocessors)) {
      flash_ = FlashAttention{q_->raw(), k_->raw(), v_->raw(), y_->raw(), elem_, mask_ ? mask_->raw() : nullptr,
                              mask_elem_, ms_, b_, heads_, sq_, sk_, d_, scale_};
      prepare_flash_attention(elem_, d_);
      kernel_ = std::string("flash.attention[") + std::to_string(heads_) + " heads]" + kernel_suffix(elem_, n.precision);
      return;
    }
    const size_t pairs = size_t(b_ * heads_);
    scores_ = DeviceMemory(pairs * size_t(sq_ * sk_) * sizeof(float));
    probs_ = DeviceMemory(pairs * size_t(sq_ * sk_) * dtype_size(y_->dtype()));
    // Pointer arrays for the batched products, one entry per (batch, head): fixed, since
    // the engine's tensors never move.
    const size_t esz = dtype_size(y_->dtype());
    std::vector<const void*> host(6 * pairs);
    for (int64_t b = 0; b < b_; ++b)
      for (int64_t h = 0; h < heads_; ++h) {
        const size_t i = size_t(b * heads_ + h);
        const size_t q_off = size_t(b * sq_ * hidden_ + h * d_) * esz, k_off = size_t(b * sk_ * hidden_ + h * d_) * esz;
        host[i] = static_cast<const char*>(k_->raw()) + k_off;                                     // QKᵀ's A
        host[pairs + i] = static_cast<const char*>(q_->raw()) + q_off;                             // QKᵀ's B
        host[2 * pairs + i] = static_cast<char*>(scores_.data()) + i * size_t(sq_ * sk_) * sizeof(float);  // QKᵀ's C
        host[3 * pairs + i] = static_cast<const char*>(v_->raw()) + k_off;                         // PV's A
        host[4 * pairs + i] = static_cast<char*>(probs_.data()) + i * size_t(sq_ * sk_) * esz;      // PV's B
        host[5 * pairs + i] = static_cast<char*>(y_->raw()) + q_off;                               // PV's C
      }
    pointers_ = DeviceMemory(host.data(), host.size() * sizeof(void*));
    kernel_ = std::string("cublas.attention[") + std::to_string(heads_) + " heads]" + kernel_suffix(elem_, n.precision);
    if (elem_ == Elem::F32 && n.precision == Precision::TF32) compute_ = CUBLAS_COMPUTE_32F_FAST_TF32;
  }
  void run() override {
    if (flash_) {
      launch_flash_attention(*flash_, ctx_.stream);
      return;
    }
    const size_t pairs = size_t(b_ * heads_);
    void** p = static_cast<void**>(pointers_.data());
    const cudaDataType_t t = cuda_type(elem_);
    const float zero = 0.f, one = 1.f;
    // 16-bit products on tensor cores: the handle's pedantic math, which keeps float32
    // products off TF32, would keep these off tensor cores too.
    const bool sixteen = elem_ == Elem::F16 || elem_ == Elem::BF16;
    if (sixteen) FB_CUDA(cublasSetMathMode(ctx_.blas, CUBLAS_DEFAULT_MATH));
    // Scores' (Sk×Sq) = K_bh (Sk×D, as D×Sk column-major, transposed) · Q_bh' (D×Sq).
    FB_CUDA(cublasGemmBatchedEx(ctx_.blas, CUBLAS_OP_T, CUBLAS_OP_N, int(sk_), int(sq_), int(d_), &scale_, p, t,
                                int(hidden_), p + pairs, t, int(hidden_), &zero, p + 2 * pairs, CUDA_R_32F, int(sk_),
                                int(pairs), compute_, CUBLAS_GEMM_DEFAULT));
    launch_attention_softmax(static_cast<const float*>(scores_.data()), mask_ ? mask_->raw() : nullptr, mask_elem_, ms_, b_,
                             heads_, sq_, sk_, elem_, probs_.data(), ctx_.stream);
    // Y_bh' (D×Sq) = V_bh' (D×Sk) · P' (Sk×Sq).
    FB_CUDA(cublasGemmBatchedEx(ctx_.blas, CUBLAS_OP_N, CUBLAS_OP_N, int(d_), int(sq_), int(sk_), &one, p + 3 * pairs, t,
                                int(hidden_), p + 4 * pairs, t, int(sk_), &zero, p + 5 * pairs, t, int(hidden_), int(pairs),
                                compute_, CUBLAS_GEMM_DEFAULT));
    if (sixteen) FB_CUDA(cublasSetMathMode(ctx_.blas, CUBLAS_PEDANTIC_MATH));
  }
  std::string kernel() const override { return kernel_; }
  double flops() const override { return 4.0 * double(b_ * heads_) * double(sq_) * double(sk_) * double(d_); }

 private:
  const Tensor *q_, *k_, *v_, *mask_;
  Tensor* y_;
  Elem elem_, mask_elem_ = Elem::F32;
  int64_t heads_, b_ = 0, sq_ = 0, sk_ = 0, hidden_ = 0, d_ = 0;
  float scale_;
  cublasComputeType_t compute_ = CUBLAS_COMPUTE_32F;
  MaskStrides ms_;
  std::optional<FlashAttention> flash_;  // the fused kernel's arguments, when it runs the layer
  DeviceMemory scores_, probs_, pointers_;
  std::string kernel_;
};

PrecisionSet attention_precisions(const Node&) { return {Precision::FP32, Precision::TF32, Precision::FP16, Precision::BF16}; }

template <typename L> std::unique_ptr<Layer> make(const LayerRequest& r, const CudaContext& ctx) {
  return std::make_unique<L>(r, ctx);
}

}  // namespace

void add_matmul_rows(std::vector<CudaOpRow>& rows) {
  rows.push_back({"", "MatMul", float_precisions, make<MatMulLayer>});
  rows.push_back({"", "Gemm", float_precisions, make<MatMulLayer>});
  rows.push_back({"fusebench", "FusedMatMul", float_precisions, make<MatMulLayer>});
  rows.push_back({"fusebench", "Attention", attention_precisions, make<AttentionLayer>});
}

}  // namespace fb::cuda
