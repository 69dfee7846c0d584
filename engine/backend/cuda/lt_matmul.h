// One (possibly batched) matrix product on cuBLASLt, planned once for its shapes and
// types: the algorithm its heuristic lists first within the workspace, or in an engine the
// fastest of the heuristic's first few timed at build (time_algorithms), bias and ReLU as
// cuBLASLt's epilogues. Row-major ONNX tensors meet column-major BLAS by the usual
// identity (C = A·B row-major is Cᵀ = Bᵀ·Aᵀ column-major), so run() passes B first.
// Used by the matrix-product layers and by convolutions that are products (patches).
#pragma once
#include <cublasLt.h>

#include <cstdint>
#include <string>
#include <vector>

#include "engine/backend/cuda/cuda_context.h"
#include "engine/backend/cuda/cuda_layer_table.h"

namespace fb::cuda {

cudaDataType_t cuda_type(Elem e);

// One (possibly batched) product D = alpha·op(A)·op(B) [+ beta·C] in row-major terms:
// A [batch, M, K] ([K, M] with trans_a), B [batch, K, N] ([N, K] with trans_b), D
// [batch, M, N]; a batch stride of 0 broadcasts an operand.
struct Product {
  int64_t m = 0, n = 0, k = 0, batch = 1;
  bool trans_a = false, trans_b = false;
  int64_t stride_a = 0, stride_b = 0;
  Elem elem = Elem::F32;
  float alpha = 1.f;
  const void* bias = nullptr;  // cuBLASLt's epilogue: + bias over N, then ReLU if relu
  Elem bias_elem = Elem::F32;
  bool relu = false;
};

class LtMatmul {
 public:
  // node: for the tf32 setting and for errors naming the layer.
  LtMatmul(const Product& p, const CudaContext& ctx, const Node& node);
  ~LtMatmul();
  LtMatmul(const LtMatmul&) = delete;
  LtMatmul& operator=(const LtMatmul&) = delete;

  // D = alpha·A·B (+ beta·C, C of D's shape, when c is given).
  void run(const void* a, const void* b, void* d, const void* c = nullptr, float beta = 0.f) const;

  // TensorRT's tactic timing: the heuristic's first kCandidates algorithms that fit the
  // workspace, each run on these buffers (d is overwritten) and clocked as the engine will
  // pay, the GPU's time replayed in a CUDA graph (in_graph) or back-to-back launches
  // (eager); the fastest is kept, and remembered per product for the process so that
  // execution contexts and rebuilt engines do not time again. False where fewer than two
  // candidates ran (the heuristic's first stays).
  static constexpr int kCandidates = 8;
  bool time_algorithms(const void* a, const void* b, void* d, bool in_graph);
  // The chosen algorithm's cuBLASLt id, for kernel names.
  int algorithm_id() const;

 private:
  template <typename T> void set(cublasLtMatmulDescAttributes_t attr, const T& value);
  cublasLtMatrixLayout_t layout(cudaDataType_t t, int64_t rows, int64_t cols, int64_t batch_stride) const;

  Product p_;
  const CudaContext& ctx_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  std::vector<cublasLtMatmulAlgo_t> candidates_;  // the heuristic's, best first; algo_ is the first
  std::string key_;  // the product's shapes, types and epilogue, for the process-wide choice
};

}  // namespace fb::cuda
