#include "engine/backend/cpu/channels_last_layers.h"

#include <tbb/parallel_for.h>

#include <vector>

#include "engine/backend/cpu/conv.h"

namespace fb {

namespace {

// The [N, C, H, W] tensor's NHWC bytes as a plain NCHW tensor, for captures.
Tensor nhwc_to_nchw(const Tensor& t) {
  const Shape& s = t.shape();
  const int64_t n = s[0], c = s[1], hw = s[2] * s[3];
  Tensor out(DType::Float32, s);
  const float* x = t.data<float>();
  float* y = out.data<float>();
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < hw; ++p)
      for (int64_t k = 0; k < c; ++k) y[(b * c + k) * hw + p] = x[(b * hw + p) * c + k];
  return out;
}

// Channels per task: 64 floats, four AVX-512 vectors of running sums.
constexpr int64_t kChannelBlock = 64;

// y[n, c] = mean over h, w of x[n, h, w, c]: each task sums a block of channels over the
// image, reading rows of contiguous channels.
class GlobalAveragePoolNhwc : public Layer {
 public:
  GlobalAveragePoolNhwc(const Tensor* x, Tensor* y) : x_(x), y_(y) {}
  void run() override {
    const Shape& s = x_->shape();
    const int64_t n = s[0], c = s[1], hw = s[2] * s[3], blocks = (c + kChannelBlock - 1) / kChannelBlock;
    const float* x = x_->data<float>();
    float* y = y_->data<float>();
    const float inv = hw ? 1.f / float(hw) : 0.f;
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, n * blocks), [&](const tbb::blocked_range<int64_t>& r) {
      for (int64_t task = r.begin(); task < r.end(); ++task) {
        const int64_t b = task / blocks, c0 = task % blocks * kChannelBlock, len = std::min(kChannelBlock, c - c0);
        float acc[kChannelBlock] = {};
        const float* xp = x + b * hw * c + c0;
        for (int64_t p = 0; p < hw; ++p, xp += c)
#pragma omp simd
          for (int64_t k = 0; k < len; ++k) acc[k] += xp[k];
        for (int64_t k = 0; k < len; ++k) y[b * c + c0 + k] = acc[k] * inv;
      }
    });
  }
  std::string kernel() const override { return "fusebench.global_avg_pool nhwc"; }
  double flops() const override { return double(x_->numel()); }

 private:
  const Tensor* x_;
  Tensor* y_;
};

// y[n, h, w, c] = x[n, h, w, c] · s[n or 0, c], in place when y is x.
class ChannelGateNhwc : public Layer {
 public:
  ChannelGateNhwc(const Tensor* x, const Tensor* s, Tensor* y) : x_(x), s_(s), y_(y) {}
  void run() override {
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
  std::string kernel() const override { return "fusebench.channel_gate nhwc→nhwc"; }
  double flops() const override { return double(y_->numel()); }
  Tensor plain_copy(const Tensor& output) const override {
    return &output == y_ ? nhwc_to_nchw(output) : output.clone();
  }

 private:
  const Tensor *x_, *s_;
  Tensor* y_;
};

bool channels_last(const Node& n, const char* key) { return n.attr_string(key, "") == kChannelsLast; }

}  // namespace

int channel_gate_operand(const Shape& a, const Shape& b, const Shape& out) {
  auto gate_of = [&](const Shape& x, const Shape& s) {
    return x.size() == 4 && x == out && s.size() == 4 && (s[0] == x[0] || s[0] == 1) && s[1] == x[1] && s[2] == 1 && s[3] == 1 &&
           (x[2] != 1 || x[3] != 1);
  };
  if (gate_of(a, b)) return 0;
  if (gate_of(b, a)) return 1;
  return -1;
}

std::unique_ptr<Layer> make_channels_last_layer(const LayerRequest& r) {
  const Node& n = r.node;
  const std::vector<const Tensor*>& ins = r.inputs;
  auto all_float = [&] {
    for (const Tensor* t : ins)
      if (!t || t->dtype() != DType::Float32) return false;
    return r.outputs.size() == 1 && r.outputs[0] && r.outputs[0]->dtype() == DType::Float32;
  };
  if (!n.domain.empty() || !all_float()) return nullptr;
  if (n.op_type == "GlobalAveragePool" && channels_last(n, "x_layout") && !n.has_attr("y_layout") && ins.size() == 1 &&
      ins[0]->rank() == 4)
    return std::make_unique<GlobalAveragePoolNhwc>(ins[0], r.outputs[0]);
  if (n.op_type == "Mul" && channels_last(n, "x_layout") && channels_last(n, "y_layout") && ins.size() == 2) {
    const int x = channel_gate_operand(ins[0]->shape(), ins[1]->shape(), r.outputs[0]->shape());
    if (x >= 0) return std::make_unique<ChannelGateNhwc>(ins[size_t(x)], ins[size_t(1 - x)], r.outputs[0]);
  }
  return nullptr;
}

}  // namespace fb
