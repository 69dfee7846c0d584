// Fused (flash-style) attention for 16-bit layers: softmax(scale·Q·Kᵀ + mask)·V in one
// kernel per (batch, head, 64 queries), the scores and the output kept in registers, never
// written to device memory. Products on tensor cores (mma.sync, fp16 or bf16 operands,
// float32 accumulators), the softmax online over tiles of 64 keys in float32, the
// probabilities rounded to the layer's type before their product with V, as the unfused
// path rounds them.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/backend/cuda/cuda_layer_table.h"
#include "engine/backend/cuda/epilogue_kernels.h"

namespace fb::cuda {

struct FlashAttention {
  const void* q = nullptr;  // [B, Sq, H·D]
  const void* k = nullptr;  // [B, Sk, H·D]
  const void* v = nullptr;  // [B, Sk, H·D]
  void* y = nullptr;        // [B, Sq, H·D]
  Elem elem = Elem::F16;    // of q, k, v and y: F16 or BF16
  const void* mask = nullptr;  // additive, broadcast to [B, H, Sq, Sk] through ms
  Elem mask_elem = Elem::F32;
  MaskStrides ms;
  int64_t batch = 0, heads = 0, sq = 0, sk = 0, dim = 0;
  float scale = 1.f;
};

// Whether the kernel runs this attention: 16-bit elements, a head dim that is a multiple of
// 16 up to 128 (the tensor cores' tile; larger heads would not fit shared memory), and
// enough (batch, head, 64-query) blocks to fill the GPU twice over. With fewer it leaves
// SMs idle. Measured with the kernel's first (WMMA) form on an H200 (132 SMs): the exported
// ViT-tiny at batch 1 (12 blocks) took 1.23 ms in a CUDA graph against 0.67 ms on the
// cuBLAS path, BERT-base at batch 8 (192 blocks) 1.52 against 1.48, while at batch 32
// (768 blocks) attention took 0.092 ms against 0.106.
bool flash_attention_runs(Elem elem, int64_t head_dim, int64_t batch, int64_t heads, int64_t queries,
                          int multiprocessors);

// Once per layer before its first launch (and outside stream capture): lets the kernel use
// the shared memory its head dim needs.
void prepare_flash_attention(Elem elem, int64_t head_dim);

void launch_flash_attention(const FlashAttention& a, cudaStream_t stream);

}  // namespace fb::cuda
