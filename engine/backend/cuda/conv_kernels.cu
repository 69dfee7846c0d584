#include "engine/backend/cuda/conv_kernels.h"

#include <algorithm>
#include <string>

#include "engine/backend/cuda/device_math.cuh"
#include "engine/ir/error.h"

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

// One thread per element of the patch matrix, in its order (the writes contiguous).
template <typename T>
__global__ void patch_gather_kernel(PatchGather p, int32_t total) {
  const int32_t k = int32_t(p.channels * p.kernel_h * p.kernel_w), kk = int32_t(p.kernel_h * p.kernel_w);
  const int32_t kw = int32_t(p.kernel_w), ow = int32_t(p.out_w), patches = int32_t(p.out_h * p.out_w);
  const T* x = static_cast<const T*>(p.x);
  T* rows = static_cast<T*>(p.rows);
  for (int32_t idx = int32_t(blockIdx.x) * int32_t(blockDim.x) + int32_t(threadIdx.x); idx < total;
       idx += int32_t(gridDim.x) * int32_t(blockDim.x)) {
    const int32_t row = idx / k, col = idx % k;
    const int32_t n = row / patches, patch = row % patches, ph = patch / ow, pw = patch % ow;
    const int32_t c = col / kk, i = (col % kk) / kw, j = col % kw;
    const int32_t h = ph * int32_t(p.kernel_h) + i, w = pw * kw + j;
    rows[idx] = x[n * p.stride_n + c * p.stride_c + h * p.stride_h + w * p.stride_w];
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

void launch_patch_gather(const PatchGather& p, cudaStream_t stream) {
  const int64_t total = p.batch * p.out_h * p.out_w * p.channels * p.kernel_h * p.kernel_w;
  if (total == 0) return;
  if (!fits_32_bits(total)) throw Error("patch gather: " + std::to_string(total) + " elements need 64-bit indices");
  const int threads = 256;
  const unsigned blocks = unsigned(std::min<int64_t>((total + threads - 1) / threads, 65535 * 4));
  // Copies, not conversions: 16-bit elements as uint16_t.
  if (p.elem_bytes == 2) patch_gather_kernel<uint16_t><<<blocks, threads, 0, stream>>>(p, int32_t(total));
  else patch_gather_kernel<uint32_t><<<blocks, threads, 0, stream>>>(p, int32_t(total));
  FB_CUDA(cudaGetLastError());
}

}  // namespace fb::cuda
