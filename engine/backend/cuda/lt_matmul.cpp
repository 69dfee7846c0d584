#include "engine/backend/cuda/lt_matmul.h"

#include <map>
#include <mutex>
#include <string>

#include "engine/backend/cuda/algorithm_timing.h"
#include "engine/ir/error.h"

namespace fb::cuda {

cudaDataType_t cuda_type(Elem e) { return e == Elem::F16 ? CUDA_R_16F : e == Elem::BF16 ? CUDA_R_16BF : CUDA_R_32F; }

template <typename T>
void LtMatmul::set(cublasLtMatmulDescAttributes_t attr, const T& value) {
  FB_CUDA(cublasLtMatmulDescSetAttribute(desc_, attr, &value, sizeof value));
}

LtMatmul::LtMatmul(const Product& p, const CudaContext& ctx, const Node& node) : p_(p), ctx_(ctx) {
  const cudaDataType_t t = cuda_type(p.elem);
  // tf32: float32 operands, products on tensor cores with 10-bit mantissas (Precision::TF32).
  const bool tf32 = p.elem == Elem::F32 && node.precision == Precision::TF32;
  FB_CUDA(cublasLtMatmulDescCreate(&desc_, tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F, CUDA_R_32F));
  // Column-major: D' (N×M) = B' (N×K) · A' (K×M); a stored row-major X is X' read column-major.
  const cublasOperation_t op_b = p.trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, op_a = p.trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
  set(CUBLASLT_MATMUL_DESC_TRANSA, op_b);
  set(CUBLASLT_MATMUL_DESC_TRANSB, op_a);
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, p.bias ? (p.relu ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_BIAS)
                                            : (p.relu ? CUBLASLT_EPILOGUE_RELU : CUBLASLT_EPILOGUE_DEFAULT));
  if (p.bias) {
    set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, p.bias);
    set(CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, cuda_type(p.bias_elem));
  }
  b_ = layout(t, p.trans_b ? p.k : p.n, p.trans_b ? p.n : p.k, p.stride_b);
  a_ = layout(t, p.trans_a ? p.m : p.k, p.trans_a ? p.k : p.m, p.stride_a);
  d_ = layout(t, p.n, p.m, p.m * p.n);
  cublasLtMatmulPreference_t pref;
  FB_CUDA(cublasLtMatmulPreferenceCreate(&pref));
  FB_CUDA(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ctx.workspace_bytes,
                                               sizeof ctx.workspace_bytes));
  int found = 0;
  cublasLtMatmulHeuristicResult_t h[kCandidates]{};
  const cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(ctx.blas_lt, desc_, b_, a_, d_, d_, pref, kCandidates, h, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  for (int i = 0; s == CUBLAS_STATUS_SUCCESS && i < found; ++i)
    if (h[i].state == CUBLAS_STATUS_SUCCESS && h[i].workspaceSize <= ctx.workspace_bytes) candidates_.push_back(h[i].algo);
  if (candidates_.empty())
    throw Error(node.describe() + ": cuBLASLt has no algorithm for this product (M " + std::to_string(p.m) + ", N " +
                std::to_string(p.n) + ", K " + std::to_string(p.k) + ", batch " + std::to_string(p.batch) + ")");
  algo_ = candidates_.front();
  for (int64_t v : {int64_t(ctx.device), int64_t(p.elem), int64_t(tf32), p.m, p.n, p.k, p.batch, int64_t(p.trans_a),
                    int64_t(p.trans_b), p.stride_a, p.stride_b, int64_t(p.bias != nullptr), int64_t(p.bias_elem),
                    int64_t(p.relu)})
    key_ += std::to_string(v) + " ";
}

bool LtMatmul::time_algorithms(const void* a, const void* b, void* d, bool in_graph) {
  static std::mutex mutex;
  static std::map<std::string, cublasLtMatmulAlgo_t> chosen;
  std::lock_guard<std::mutex> lock(mutex);
  const std::string key = key_ + (in_graph ? "graph" : "eager");
  if (auto it = chosen.find(key); it != chosen.end()) return algo_ = it->second, true;
  if (candidates_.size() < 2) return false;
  double best = -1;
  for (const cublasLtMatmulAlgo_t& algo : candidates_) {
    const float beta = 0.f;
    auto call = [&] {
      return cublasLtMatmul(ctx_.blas_lt, desc_, &p_.alpha, b, b_, a, a_, &beta, d, d_, d, d_, &algo, ctx_.workspace,
                            ctx_.workspace_bytes, ctx_.stream) == CUBLAS_STATUS_SUCCESS;
    };
    const double ms = in_graph ? graph_replay_ms(ctx_.stream, call) : eager_ms(ctx_.stream, call);
    if (ms >= 0 && (best < 0 || ms < best)) best = ms, algo_ = algo;
  }
  if (best < 0) return algo_ = candidates_.front(), false;
  chosen[key] = algo_;
  return true;
}

int LtMatmul::algorithm_id() const {
  int id = -1;
  size_t written = 0;
  cublasLtMatmulAlgoConfigGetAttribute(&algo_, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof id, &written);
  return id;
}

LtMatmul::~LtMatmul() {
  cublasLtMatrixLayoutDestroy(a_);
  cublasLtMatrixLayoutDestroy(b_);
  cublasLtMatrixLayoutDestroy(d_);
  cublasLtMatmulDescDestroy(desc_);
}

void LtMatmul::run(const void* a, const void* b, void* d, const void* c, float beta) const {
  FB_CUDA(cublasLtMatmul(ctx_.blas_lt, desc_, &p_.alpha, b, b_, a, a_, &beta, c ? c : d, d_, d, d_, &algo_,
                         ctx_.workspace, ctx_.workspace_bytes, ctx_.stream));
}

cublasLtMatrixLayout_t LtMatmul::layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t batch_stride) const {
  cublasLtMatrixLayout_t l;
  FB_CUDA(cublasLtMatrixLayoutCreate(&l, t, uint64_t(rows), uint64_t(cols), rows));
  if (p_.batch > 1) {
    const int32_t count = int32_t(p_.batch);
    FB_CUDA(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count));
    FB_CUDA(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &batch_stride,
                                             sizeof batch_stride));
  }
  return l;
}

}  // namespace fb::cuda
