#include "engine/backend/cuda/conv_kernels.h"

#include <algorithm>

#include "engine/backend/cuda/device_math.cuh"

namespace fb::cuda {

namespace {

template <typename I>
__global__ void depthwise_conv_kernel(DepthwiseConv p, I total) {
  const I out_w = I(p.out_w), out_h = I(p.out_h), in_w = I(p.in_w), in_h = I(p.in_h);
  const I channels = I(p.channels);
  for (I i = I(blockIdx.x) * I(blockDim.x) + I(threadIdx.x); i < total; i += I(gridDim.x) * I(blockDim.x)) {
    // Output i's channel, pixel and the element stride between neighbouring input pixels.
    I ch, ox, oy, x0, step;
    if (p.channels_last) {  // i = ((b·oh + oy)·ow + ox)·C + ch
      ch = i % channels;
      I rest = i / channels;
      ox = rest % out_w;
      rest /= out_w;
      oy = rest % out_h;
      x0 = (rest / out_h) * in_h * in_w * channels + ch;  // sample b's first pixel, channel ch
      step = channels;
    } else {  // i = ((b·C + ch)·oh + oy)·ow + ox
      ox = i % out_w;
      I rest = i / out_w;
      oy = rest % out_h;
      rest /= out_h;
      ch = rest % channels;
      x0 = rest * in_h * in_w;  // (b·C + ch)'s plane
      step = 1;
    }
    const I w0 = ch * I(p.kernel_h * p.kernel_w);
    float acc = 0.f;
    for (I ky = 0; ky < I(p.kernel_h); ++ky) {
      const I iy = oy * I(p.stride_h) - I(p.pad_h) + ky * I(p.dilation_h);
      if (iy < 0 || iy >= in_h) continue;
      for (I kx = 0; kx < I(p.kernel_w); ++kx) {
        const I ix = ox * I(p.stride_w) - I(p.pad_w) + kx * I(p.dilation_w);
        if (ix < 0 || ix >= in_w) continue;
        acc += load(p.x, p.elem, x0 + (iy * in_w + ix) * step) * load(p.weights, p.elem, w0 + ky * I(p.kernel_w) + kx);
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
  // The input's planes are as large as the output's or larger: the index range is theirs.
  if (fits_32_bits(std::max(total, p.batch * p.channels * p.in_h * p.in_w)))
    depthwise_conv_kernel<int32_t><<<unsigned(blocks), threads, 0, stream>>>(p, int32_t(total));
  else
    depthwise_conv_kernel<int64_t><<<unsigned(blocks), threads, 0, stream>>>(p, total);
  FB_CUDA(cudaGetLastError());
}

}  // namespace fb::cuda
