// Convolutions of our own beside cuDNN's: the depthwise 2-D convolution (groups = input
// channels = output channels), which PyTorch also runs on its own CUDA kernel in float32
// (cuDNN's heuristic picks slow algorithms for it in NCHW); and the gather that makes a
// convolution of non-overlapping patches (kernel = stride, no padding: ViT's patch
// embedding) a matrix product.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "engine/backend/cuda/cuda_layer_table.h"
#include "engine/ops/activation_kind.h"

namespace fb::cuda {

struct DepthwiseConv {
  int64_t batch = 1, channels = 1, in_h = 1, in_w = 1, out_h = 1, out_w = 1;  // x [b,c,ih,iw], y [b,c,oh,ow]
  bool channels_last = false;  // x, residual and y hold [b,h,w,c] bytes
  int64_t kernel_h = 1, kernel_w = 1, stride_h = 1, stride_w = 1, pad_h = 0, pad_w = 0, dilation_h = 1, dilation_w = 1;
  Elem elem = Elem::F32;  // x, weights, bias, residual and y (float32 arithmetic)
  const void* x = nullptr;
  const void* weights = nullptr;   // [c, 1, kh, kw]
  const void* bias = nullptr;      // [c] or nullptr
  const void* residual = nullptr;  // y's shape, or nullptr; may be y itself
  void* y = nullptr;
  ActivationKind act = ActivationKind::None;
  float lo = 0, hi = 0;  // Clip's bounds
};

// One thread per output element: the window's products, then bias, residual and the
// activation before the one store.
void launch_depthwise_conv(const DepthwiseConv& p, cudaStream_t stream);

// The patches of x [n, c, h, w] (any layout, through its element strides) as the rows of
// a [n·oh·ow, c·kh·kw] matrix: row (n, ph, pw), column (c, i, j) holds x(n, c, ph·kh + i,
// pw·kw + j). Elements are copied as they are (elem_bytes 2 or 4), never converted.
struct PatchGather {
  int64_t batch = 1, channels = 1, out_h = 1, out_w = 1, kernel_h = 1, kernel_w = 1;
  int64_t stride_n = 0, stride_c = 0, stride_h = 0, stride_w = 0;  // x's element strides
  int elem_bytes = 2;
  const void* x = nullptr;
  void* rows = nullptr;
};
void launch_patch_gather(const PatchGather& p, cudaStream_t stream);

}  // namespace fb::cuda
