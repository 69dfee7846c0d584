#include "engine/backend/cuda/conv_kernels.h"

#include <algorithm>

#include "engine/backend/cuda/device_math.cuh"

namespace fb::cuda {

namespace {

__global__ void depthwise_conv_kernel(DepthwiseConv p, int64_t total) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < total; i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t ox = i % p.out_w;
    int64_t rest = i / p.out_w;
    const int64_t oy = rest % p.out_h;
    rest /= p.out_h;
    const int64_t ch = rest % p.channels;
    const int64_t x0 = rest * p.in_h * p.in_w;  // (b·C + ch)'s plane
    const int64_t w0 = ch * p.kernel_h * p.kernel_w;
    float acc = 0.f;
    for (int64_t ky = 0; ky < p.kernel_h; ++ky) {
      const int64_t iy = oy * p.stride_h - p.pad_h + ky * p.dilation_h;
      if (iy < 0 || iy >= p.in_h) continue;
      for (int64_t kx = 0; kx < p.kernel_w; ++kx) {
        const int64_t ix = ox * p.stride_w - p.pad_w + kx * p.dilation_w;
        if (ix < 0 || ix >= p.in_w) continue;
        acc += load(p.x, p.elem, x0 + iy * p.in_w + ix) * load(p.weights, p.elem, w0 + ky * p.kernel_w + kx);
      }
    }
    if (p.bias) acc += load(p.bias, p.elem, ch);
    if (p.residual) acc += load(p.residual, p.elem, i);  // read before this thread's own store
    store(p.y, p.elem, i, activate(p.act, acc, p.lo, p.hi));
  }
}

}  // namespace

void launch_depthwise_conv(const DepthwiseConv& p, cudaStream_t stream) {
  const int64_t total = p.batch * p.channels * p.out_h * p.out_w;
  if (total == 0) return;
  const int threads = 256;
  const int64_t blocks = std::min<int64_t>((total + threads - 1) / threads, int64_t(65535) * 8);
  depthwise_conv_kernel<<<unsigned(blocks), threads, 0, stream>>>(p, total);
  FB_CUDA(cudaGetLastError());
}

}  // namespace fb::cuda
