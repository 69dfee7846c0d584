#include "engine/backend/cpu/channels_last_layers.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>
#include <vector>

#include "engine/backend/cpu/conv.h"
#include "engine/ops/int8_quantize.h"
#include "engine/ops/group_norm.h"
#include "engine/ops/isa_kernels.h"
#include "engine/ops/nn_common.h"
#include "engine/ops/resize.h"
#include "engine/ops/fused_conv.h"

namespace fb {

namespace {

// A layer whose outputs of rank 3 to 5 hold channels-last bytes under their logical
// shapes: captures come back plain.
class NhwcOutputLayer : public Layer {
 public:
  Tensor plain_copy(const Tensor& output) const override {
    return output.rank() >= 3 ? channels_last_to_plain(output) : output.clone();
  }
};

// Rows of pixels, about 64 KiB of channels per task.
int64_t pixel_grain(int64_t row_bytes) { return std::max<int64_t>(1, 65536 / std::max<int64_t>(row_bytes, 1)); }

// `pixels` rows of `len` bytes from x (a row every x_row bytes) to y (every y_row bytes):
// one input's channels into, or out of, each pixel of a concatenation. On OpenMP, like the
// max pool: the convolutions on either side are oneDNN's, whose OpenMP threads are still
// spinning, where oneTBB's workers had to be woken (at batch 1 GoogLeNet's Concats went
// 0.46 → 0.27 ms, SqueezeNet's 0.52 → 0.27). The other layers here stay on oneTBB: on
// OpenMP a squeeze-excite block's gate took about twice as long (EfficientNet-B0 at batch
// 1: 7.49 → 8.95 ms).
void copy_pixel_rows(const char* x, int64_t x_row, char* y, int64_t y_row, int64_t len, int64_t pixels) {
#pragma omp parallel for schedule(static)
  for (int64_t p = 0; p < pixels; ++p) std::memcpy(y + p * y_row, x + p * x_row, size_t(len));
}

// Concat over channels of channels-last tensors: each pixel's row of channels is its
// inputs' rows, one after the other (any element type).
class ConcatNhwc : public NhwcOutputLayer {
 public:
  ConcatNhwc(std::vector<const Tensor*> xs, Tensor* y) : xs_(std::move(xs)), y_(y) {}
  void run() override {
    const Shape& s = y_->shape();
    const int64_t pixels = s[0] * s[2] * s[3], esize = int64_t(dtype_size(y_->dtype())), row = s[1] * esize;
    char* y = static_cast<char*>(y_->raw());
    int64_t at = 0;
    for (const Tensor* x : xs_) {
      const int64_t len = x->shape()[1] * esize;
      copy_pixel_rows(static_cast<const char*>(x->raw()), len, y + at, row, len, pixels);
      at += len;
    }
  }
  std::string kernel() const override { return "fusebench.concat nhwc→nhwc"; }
  double flops() const override { return 0; }

 private:
  std::vector<const Tensor*> xs_;
  Tensor* y_;
};

// Split over channels of a channels-last tensor: the inverse of ConcatNhwc.
class SplitNhwc : public NhwcOutputLayer {
 public:
  SplitNhwc(const Tensor* x, std::vector<Tensor*> ys) : x_(x), ys_(std::move(ys)) {}
  void run() override {
    const Shape& s = x_->shape();
    const int64_t pixels = s[0] * s[2] * s[3], esize = int64_t(dtype_size(x_->dtype())), row = s[1] * esize;
    const char* x = static_cast<const char*>(x_->raw());
    int64_t at = 0;
    for (Tensor* y : ys_) {
      const int64_t len = y->shape()[1] * esize;
      copy_pixel_rows(x + at, row, static_cast<char*>(y->raw()), len, len, pixels);
      at += len;
    }
  }
  std::string kernel() const override { return "fusebench.split nhwc→nhwc"; }
  double flops() const override { return 0; }

 private:
  const Tensor* x_;
  std::vector<Tensor*> ys_;
};

// ShuffleNet's channel shuffle on channels-last tensors: each pixel's channels permuted,
// output channel k * groups + j from input channel j * (C / groups) + k (any element type).
class ChannelShuffleNhwc : public NhwcOutputLayer {
 public:
  ChannelShuffleNhwc(const Tensor* x, Tensor* y, int64_t groups) : x_(x), y_(y), groups_(groups) {}
  void run() override {
    const Shape& s = x_->shape();
    const int64_t pixels = s[0] * s[2] * s[3], c = s[1], per_group = c / groups_;
    const size_t esize = dtype_size(x_->dtype());
    const char* x = static_cast<const char*>(x_->raw());
    char* y = static_cast<char*>(y_->raw());
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, pixels, pixel_grain(c * int64_t(esize))), [&](const tbb::blocked_range<int64_t>& r) {
      for (int64_t p = r.begin(); p < r.end(); ++p) {
        const char* xp = x + size_t(p * c) * esize;
        char* yp = y + size_t(p * c) * esize;
        if (esize == 4) {
          const float* xf = reinterpret_cast<const float*>(xp);
          float* yf = reinterpret_cast<float*>(yp);
          for (int64_t k = 0; k < per_group; ++k)
            for (int64_t j = 0; j < groups_; ++j) yf[k * groups_ + j] = xf[j * per_group + k];
          continue;
        }
        for (int64_t k = 0; k < per_group; ++k)
          for (int64_t j = 0; j < groups_; ++j) std::memcpy(yp + size_t(k * groups_ + j) * esize, xp + size_t(j * per_group + k) * esize, esize);
      }
    });
  }
  std::string kernel() const override { return "fusebench.channel_shuffle nhwc→nhwc"; }
  double flops() const override { return 0; }

 private:
  const Tensor* x_;
  Tensor* y_;
  int64_t groups_;
};

// a + b of two channels-last tensors of one shape: the same bytes as the plain sum.
class AddNhwc : public NhwcOutputLayer {
 public:
  AddNhwc(const Tensor* a, const Tensor* b, Tensor* y) : a_(a), b_(b), y_(y) {}
  void run() override {
    const float* a = a_->data<float>();
    const float* b = b_->data<float>();
    float* y = y_->data<float>();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, y_->numel(), 16384), [&](const tbb::blocked_range<int64_t>& r) {
#pragma omp simd
      for (int64_t i = r.begin(); i < r.end(); ++i) y[i] = a[i] + b[i];
    });
  }
  std::string kernel() const override { return "fusebench.add nhwc→nhwc"; }
  double flops() const override { return double(y_->numel()); }

 private:
  const Tensor *a_, *b_;
  Tensor* y_;
};

// fusebench.ChannelAffine of a channels-last float tensor: x · scale[c] + shift[c] along
// each pixel's row of channels (with Relu: a DenseNet's pre-activation BatchNorm-ReLU).
class ChannelAffineNhwc : public NhwcOutputLayer {
 public:
  ChannelAffineNhwc(const Tensor* x, const Tensor* scale, const Tensor* shift, Tensor* y, bool relu)
      : x_(x), scale_(scale), shift_(shift), y_(y), relu_(relu) {}
  void run() override {
    const int64_t c = y_->shape()[1], pixels = c ? y_->numel() / c : 0;
    const float *x = x_->data<float>(), *a = scale_->data<float>(), *b = shift_->data<float>();
    float* y = y_->data<float>();
    const float floor = relu_ ? 0.f : -INFINITY;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, pixels, pixel_grain(c * 4)), [&](const tbb::blocked_range<int64_t>& r) {
      for (int64_t p = r.begin(); p < r.end(); ++p) {
        const float* xr = x + p * c;
        float* yr = y + p * c;
#pragma omp simd
        for (int64_t k = 0; k < c; ++k) {
          const float v = xr[k] * a[k] + b[k];
          yr[k] = v > floor ? v : floor;
        }
      }
    });
  }
  std::string kernel() const override { return std::string("fusebench.channel_affine") + (relu_ ? "+relu" : "") + " nhwc→nhwc"; }
  double flops() const override { return 2.0 * double(y_->numel()); }

 private:
  const Tensor *x_, *scale_, *shift_;
  Tensor* y_;
  bool relu_;
};

// fusebench.GroupNorm of a channels-last float tensor of rank 3 to 5.
class GroupNormNhwc : public NhwcOutputLayer {
 public:
  GroupNormNhwc(const Node& node, std::vector<const Tensor*> inputs, Tensor* y)
      : node_(node), inputs_(std::move(inputs)), y_(y) {}
  void run() override { group_norm_channels_last(inputs_[0]->data<float>(), y_->data<float>(), group_norm_args(node_, inputs_)); }
  std::string kernel() const override {
    const std::string act = node_.attr_string("activation", "");
    return "fusebench.group_norm" + (act.empty() ? "" : "+" + act) + " channels-last";
  }
  double flops() const override { return 0; }

 private:
  Node node_;
  std::vector<const Tensor*> inputs_;
  Tensor* y_;
};

// Resize of the spatial dims of a channels-last float tensor (N and C kept): each output
// pixel is the weighted sum of its taps' rows of channels; nearest copies one row.
class ResizeNhwc : public NhwcOutputLayer {
 public:
  ResizeNhwc(const Tensor* x, Tensor* y, std::vector<ResizeTaps> taps) : x_(x), y_(y), taps_(std::move(taps)) {}
  void run() override {
    const Shape& in = x_->shape();
    const Shape& out = y_->shape();
    const int64_t c = in[1], ih = in[2], iw = in[3], oh = out[2], ow = out[3];
    const ResizeTaps& th = taps_[2];
    const ResizeTaps& tw = taps_[3];
    const bool nearest = th.single() && tw.single();
    const float* x = x_->data<float>();
    float* y = y_->data<float>();
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, out[0] * oh), [&](const tbb::blocked_range<int64_t>& r) {
      for (int64_t row = r.begin(); row < r.end(); ++row) {
        const int64_t b = row / oh, o = row % oh;
        const float* xb = x + b * ih * iw * c;
        float* yr = y + row * ow * c;
        for (int64_t q = 0; q < ow; ++q) {
          float* yp = yr + q * c;
          if (nearest) {
            std::memcpy(yp, xb + (th.idx[size_t(o)] * iw + tw.idx[size_t(q)]) * c, size_t(c) * sizeof(float));
            continue;
          }
          std::fill(yp, yp + c, 0.f);
          for (int64_t i = th.start[size_t(o)]; i < th.start[size_t(o) + 1]; ++i)
            for (int64_t j = tw.start[size_t(q)]; j < tw.start[size_t(q) + 1]; ++j) {
              const float w = th.w[size_t(i)] * tw.w[size_t(j)];
              const float* xp = xb + (th.idx[size_t(i)] * iw + tw.idx[size_t(j)]) * c;
#pragma omp simd
              for (int64_t k = 0; k < c; ++k) yp[k] += w * xp[k];
            }
        }
      }
    });
  }
  std::string kernel() const override { return "fusebench.resize nhwc→nhwc"; }
  double flops() const override { return 0; }

 private:
  const Tensor* x_;
  Tensor* y_;
  std::vector<ResizeTaps> taps_;
};

// The first and one-past-last window taps k (of `kernel`, `dilation` apart from `start`)
// that land inside [0, size).
std::pair<int64_t, int64_t> taps_inside(int64_t start, int64_t kernel, int64_t dilation, int64_t size) {
  const int64_t lo = start < 0 ? (-start + dilation - 1) / dilation : 0;
  const int64_t hi = start >= size ? 0 : std::min(kernel, (size - 1 - start) / dilation + 1);
  return {lo, std::max(lo, hi)};
}

// MaxPool over the height and width of a channels-last float32 tensor (any kernel, strides,
// dilations, pads, ceil_mode): each output pixel's row of channels is the largest of its
// window's rows, in the vector form this CPU runs (engine/ops/isa_kernels.h), on OpenMP.
// Same values as the op's kernel, NaN included (IsaKernels::window_max_nhwc); a window
// wholly in the padding gives lowest(), as it does.
class MaxPoolNhwc : public NhwcOutputLayer {
 public:
  MaxPoolNhwc(const Node& n, const Tensor* x, Tensor* y)
      : x_(x), y_(y), g_(window_geometry(n, Shape{x->shape()[2], x->shape()[3]}, {}, n.attr_int("ceil_mode", 0) != 0)) {}
  void run() override {
    const Shape &xs = x_->shape(), &ys = y_->shape();
    const int64_t c = xs[1], ih = xs[2], iw = xs[3], oh = ys[2], ow = ys[3];
    const float* x = x_->data<float>();
    float* y = y_->data<float>();
#pragma omp parallel
    {
      std::vector<const float*> rows(size_t(g_.kernel[0]));
      std::vector<int64_t> cols(size_t(g_.kernel[1]));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < ys[0] * oh; ++r) {
        const int64_t b = r / oh, h0 = r % oh * g_.stride[0] - g_.pad_begin[0];
        const auto [h_lo, h_hi] = taps_inside(h0, g_.kernel[0], g_.dilation[0], ih);
        for (int64_t k = h_lo; k < h_hi; ++k) rows[size_t(k - h_lo)] = x + (b * ih + h0 + k * g_.dilation[0]) * iw * c;
        for (int64_t o = 0; o < ow; ++o) {
          const int64_t w0 = o * g_.stride[1] - g_.pad_begin[1];
          const auto [w_lo, w_hi] = taps_inside(w0, g_.kernel[1], g_.dilation[1], iw);
          for (int64_t k = w_lo; k < w_hi; ++k) cols[size_t(k - w_lo)] = (w0 + k * g_.dilation[1]) * c;
          pixel(rows.data(), h_hi - h_lo, cols.data(), w_hi - w_lo, c, y + (r * ow + o) * c);
        }
      }
    }
  }
  std::string kernel() const override { return "fusebench.max_pool nhwc→nhwc"; }
  double flops() const override { return 0; }

 private:
  static void pixel(const float* const* rows, int64_t nh, const int64_t* cols, int64_t nw, int64_t c, float* y) {
    if (nh == 0 || nw == 0) {
      std::fill(y, y + c, std::numeric_limits<float>::lowest());
      return;
    }
    isa_kernels().window_max_nhwc(rows, nh, cols, nw, c, y);
  }

  const Tensor* x_;
  Tensor* y_;
  WindowGeometry g_;
};

// Channels per task: 64 floats, four AVX-512 vectors of running sums.
constexpr int64_t kChannelBlock = 64;

// y[n, c] = mean over h, w of x[n, h, w, c]: each task sums a block of channels over the
// image, reading rows of contiguous channels. x may be u8/s8 with step x_step (an int8
// convolution wrote it: engine/passes/int8_lowering.cpp): summed exactly in int32, then scaled.
class GlobalAveragePoolNhwc : public Layer {
 public:
  GlobalAveragePoolNhwc(const Tensor* x, Tensor* y, float x_step = 0) : x_(x), y_(y), x_step_(x_step) {}
  void run() override {
    if (x_->dtype() == DType::Int8) return pool<int8_t, int32_t>(x_step_);
    if (x_->dtype() == DType::UInt8) return pool<uint8_t, int32_t>(x_step_);
    pool<float, float>(1.f);
  }
  std::string kernel() const override {
    return std::string("fusebench.global_avg_pool nhwc") + (x_->dtype() == DType::Int8    ? " s8"
                                                            : x_->dtype() == DType::UInt8 ? " u8"
                                                                                          : "");
  }
  double flops() const override { return double(x_->numel()); }

 private:
  template <typename T, typename Acc>
  void pool(float step) {
    const Shape& s = x_->shape();
    const int64_t n = s[0], c = s[1], hw = s[2] * s[3], blocks = (c + kChannelBlock - 1) / kChannelBlock;
    const T* x = static_cast<const T*>(x_->raw());
    float* y = y_->data<float>();
    const float scale = hw ? step / float(hw) : 0.f;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n * blocks), [&](const tbb::blocked_range<int64_t>& r) {
      for (int64_t task = r.begin(); task < r.end(); ++task) {
        const int64_t b = task / blocks, c0 = task % blocks * kChannelBlock, len = std::min(kChannelBlock, c - c0);
        Acc acc[kChannelBlock] = {};
        const T* xp = x + b * hw * c + c0;
        for (int64_t p = 0; p < hw; ++p, xp += c)
#pragma omp simd
          for (int64_t k = 0; k < len; ++k) acc[k] += Acc(xp[k]);
        for (int64_t k = 0; k < len; ++k) y[b * c + c0 + k] = float(acc[k]) * scale;
      }
    });
  }

  const Tensor* x_;
  Tensor* y_;
  float x_step_;
};

// y[n, h, w, c] = x[n, h, w, c] · s[n or 0, c], in place when y is x (float32 only: the
// arena planner shares buffers between tensors of one type). With an int8 output
// (its only readers int8 layers: engine/passes/int8_lowering.cpp), y is written quantized
// as a fusebench.Quantize would write the float32 product, so the float32 tensor and the
// Quantize layer are gone (EfficientNet's squeeze-excite gate before the projection).
class ChannelGateNhwc : public NhwcOutputLayer {
 public:
  // x_step > 0: x is u8/s8 with that step (an int8 convolution wrote it).
  ChannelGateNhwc(const Tensor* x, const Tensor* s, Tensor* y, float x_step = 0, float y_amax = 0, bool y_unsigned = false,
                  int y_zero_point = 0)
      : x_(x), s_(s), y_(y), x_step_(x_step), y_step_(y_amax > 0 ? int8_input_scale(y_amax, y_unsigned) : 0),
        y_unsigned_(y_unsigned), y_zero_point_(y_zero_point) {}
  void run() override {
    if (y_step_ > 0 || x_step_ > 0) return run_quantized();
    const Shape& sh = x_->shape();
    const int64_t n = sh[0], c = sh[1], hw = sh[2] * sh[3];
    const bool per_sample = s_->shape()[0] == n && n > 1;
    const float* x = x_->data<float>();
    const float* s = s_->data<float>();
    float* y = y_->data<float>();
    // Rows of c channels; about 16K elements per task.
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1));
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n * hw, grain), [&](const tbb::blocked_range<int64_t>& r) {
      for (int64_t row = r.begin(); row < r.end(); ++row) {
        const float* g = s + (per_sample ? row / hw * c : 0);
        const float* xr = x + row * c;
        float* yr = y + row * c;
#pragma omp simd
        for (int64_t k = 0; k < c; ++k) yr[k] = xr[k] * g[k];
      }
    });
  }
  std::string kernel() const override {
    std::string k = "fusebench.channel_gate nhwc→nhwc";
    if (x_step_ > 0) k += x_->dtype() == DType::UInt8 ? " u8" : " s8";
    if (y_step_ > 0)
      k += std::string(" →") +
           (y_unsigned_ ? "u8" : y_zero_point_ == kSignedAsU8ZeroPoint ? "s8(as u8+128)" : y_zero_point_ ? "u8(zero point)" : "s8");
    return k;
  }
  double flops() const override { return double(y_->numel()); }
  // A capture reads the quantized output back as the float32 values it stands for.
  Tensor plain_copy(const Tensor& output) const override {
    return y_step_ > 0 ? dequantized(channels_last_to_plain(output), y_step_, y_zero_point_) : NhwcOutputLayer::plain_copy(output);
  }

 private:
  // Each row's product in float32 (x dequantized first: q · step, then · s), then, for an
  // int8 y, quantized as a fusebench.Quantize would (the same bytes).
  void run_quantized() {
    const Shape& sh = x_->shape();
    const int64_t n = sh[0], c = sh[1], hw = sh[2] * sh[3];
    const bool per_sample = s_->shape()[0] == n && n > 1;
    const float* s = s_->data<float>();
    const DType xt = x_->dtype();
    const int64_t grain = std::max<int64_t>(1, 16384 / std::max<int64_t>(c, 1));
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n * hw, grain), [&](const tbb::blocked_range<int64_t>& r) {
      constexpr int64_t kChunk = 256;  // an int8 y's float32 products, a chunk of a row at a time (on the stack)
      float product[kChunk];
      for (int64_t row = r.begin(); row < r.end(); ++row) {
        for (int64_t k0 = 0; k0 < c; k0 += kChunk) {
          const int64_t at = row * c + k0, len = std::min(kChunk, c - k0);
          const float* g = s + (per_sample ? row / hw * c : 0) + k0;
          float* p = y_step_ > 0 ? product : y_->data<float>() + at;
          if (xt == DType::Int8) gate_row(static_cast<const int8_t*>(x_->raw()) + at, g, len, x_step_, p);
          else if (xt == DType::UInt8) gate_row(static_cast<const uint8_t*>(x_->raw()) + at, g, len, x_step_, p);
          else gate_row(x_->data<float>() + at, g, len, 1.f, p);
          if (y_step_ > 0) quantize_serial(p, len, y_step_, y_unsigned_, static_cast<uint8_t*>(y_->raw()) + at, y_zero_point_);
        }
      }
    });
  }
  template <typename T>
  static void gate_row(const T* x, const float* g, int64_t c, float step, float* p) {
    if constexpr (std::is_same_v<T, float>) {
#pragma omp simd
      for (int64_t k = 0; k < c; ++k) p[k] = x[k] * g[k];
    } else {
#pragma omp simd
      for (int64_t k = 0; k < c; ++k) p[k] = float(x[k]) * step * g[k];
    }
  }

  const Tensor *x_, *s_;
  Tensor* y_;
  float x_step_;  // > 0: x is u8/s8 with this step
  float y_step_;  // > 0: y is u8/s8 with this step
  bool y_unsigned_;
  int y_zero_point_;
};

bool channels_last(const Node& n, const char* key) { return n.attr_string(key, "") == kChannelsLast; }

// A pool or gate reading an int8 convolution's u8/s8 output: the step it reads it with
// (attributes quantized_input_amax and _unsigned, engine/passes/int8_lowering.cpp), 0 when
// it reads float32.
float quantized_step(const Node& n) {
  const float amax = n.attr_float("quantized_input_amax", 0.f);
  return amax > 0 ? int8_input_scale(amax, n.attr_int("quantized_input_unsigned", 0) != 0) : 0.f;
}
bool quantized_as(const Node& n, const Tensor* t) {
  return quantized_step(n) > 0 && t &&
         t->dtype() == (n.attr_int("quantized_input_unsigned", 0) ? DType::UInt8 : DType::Int8);
}

}  // namespace

std::unique_ptr<Layer> make_channels_last_layer(const LayerRequest& r) {
  const Node& n = r.node;
  const std::vector<const Tensor*>& ins = r.inputs;
  const std::vector<Tensor*>& outs = r.outputs;
  if (!channels_last(n, "x_layout") || ins.empty() || !ins[0]) return nullptr;
  auto is_float = [](const Tensor* t) { return t && t->dtype() == DType::Float32; };
  if (n.domain == "fusebench" && n.op_type == "GroupNorm" && channels_last(n, "y_layout") && outs.size() == 1 && outs[0] &&
      is_float(ins[0]) && is_float(outs[0]) && ins[0]->rank() >= 3)
    return std::make_unique<GroupNormNhwc>(n, ins, outs[0]);
  if (ins[0]->rank() != 4) return nullptr;
  const bool shuffle = n.domain == "fusebench" && n.op_type == "ChannelShuffle";
  const bool affine = n.domain == "fusebench" && n.op_type == "ChannelAffine";
  if (!n.domain.empty() && !shuffle && !affine) return nullptr;
  if (n.op_type == "GlobalAveragePool" && !n.has_attr("y_layout") && outs.size() == 1 && is_float(outs[0]) &&
      (is_float(ins[0]) || quantized_as(n, ins[0])))
    return std::make_unique<GlobalAveragePoolNhwc>(ins[0], outs[0], quantized_step(n));
  if (!channels_last(n, "y_layout")) return nullptr;
  // A channel gate that reads an int8 convolution's output or writes its int8 readers' input.
  if (n.op_type == "Mul" && (n.has_attr("int8_output_amax") || n.has_attr("quantized_input_amax")) && ins.size() == 2 &&
      outs.size() == 1 && outs[0]) {
    const int xi = channel_gate_operand(ins[0]->shape(), ins[1]->shape(), outs[0]->shape());
    if (xi < 0) throw Error(n.describe() + ": int8 tensors are read or written only by a channel gate");
    const Tensor *x = ins[size_t(xi)], *gate = ins[size_t(1 - xi)];
    const bool y_int8 = n.has_attr("int8_output_amax");
    const DType y_type = !y_int8 ? DType::Float32
                         : n.attr_int("int8_output_unsigned", 0) || n.attr_int("int8_output_zero_point", 0) ? DType::UInt8
                                                                                                              : DType::Int8;
    if (!is_float(gate) || !(is_float(x) || quantized_as(n, x)) || outs[0]->dtype() != y_type)
      throw Error(n.describe() + ": the channel gate's tensors are not the types its int8 attributes say");
    return std::make_unique<ChannelGateNhwc>(x, gate, outs[0], quantized_step(n), n.attr_float("int8_output_amax", 0.f),
                                             n.attr_int("int8_output_unsigned", 0) != 0, int(n.attr_int("int8_output_zero_point", 0)));
  }
  for (const Tensor* t : outs)
    if (!t || t->rank() != 4 || t->dtype() != ins[0]->dtype()) return nullptr;
  if (n.op_type == "Concat" && outs.size() == 1) {
    for (const Tensor* t : ins)
      if (!t || t->rank() != 4 || t->dtype() != outs[0]->dtype()) return nullptr;
    return std::make_unique<ConcatNhwc>(ins, outs[0]);
  }
  if (n.op_type == "Split") return std::make_unique<SplitNhwc>(ins[0], outs);
  if (n.op_type == "MaxPool" && outs.size() == 1 && is_float(ins[0]) && n.attr_int("storage_order", 0) == 0)
    return std::make_unique<MaxPoolNhwc>(n, ins[0], outs[0]);
  if (shuffle && outs.size() == 1) return std::make_unique<ChannelShuffleNhwc>(ins[0], outs[0], n.attr_int("groups", 1));
  if (outs.size() != 1 || !is_float(ins[0]) || !is_float(outs[0])) return nullptr;
  if (affine && ins.size() == 3 && is_float(ins[1]) && is_float(ins[2]))
    return std::make_unique<ChannelAffineNhwc>(ins[0], ins[1], ins[2], outs[0], n.attr_string("activation", "") == "relu");
  if (n.op_type == "Add" && ins.size() == 2 && is_float(ins[1]) && ins[0]->shape() == outs[0]->shape() &&
      ins[1]->shape() == outs[0]->shape())
    return std::make_unique<AddNhwc>(ins[0], ins[1], outs[0]);
  if (n.op_type == "Resize") {
    std::vector<ResizeTaps> taps = resize_taps(n, ins[0]->shape(), ins);
    if (resizes_height_and_width_only(taps)) return std::make_unique<ResizeNhwc>(ins[0], outs[0], std::move(taps));
  }
  if (n.op_type == "Mul" && ins.size() == 2 && is_float(ins[1])) {
    const int x = channel_gate_operand(ins[0]->shape(), ins[1]->shape(), outs[0]->shape());
    if (x >= 0) return std::make_unique<ChannelGateNhwc>(ins[size_t(x)], ins[size_t(1 - x)], outs[0]);
  }
  return nullptr;
}

}  // namespace fb
