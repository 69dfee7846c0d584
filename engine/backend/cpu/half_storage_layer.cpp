#include "engine/backend/cpu/half_storage_layer.h"

#include <tbb/parallel_for.h>

#include "engine/ops/half_float.h"

namespace fb {

namespace {

// Conversions of large tensors in parallel; 16K elements per task at least.
void widen(const Tensor& in, Tensor& out) {
  const auto* src = static_cast<const uint16_t*>(in.raw());
  float* dst = out.data<float>();
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, in.numel(), 16384), [&](const tbb::blocked_range<int64_t>& r) {
    widen_16(in.dtype(), src + r.begin(), dst + r.begin(), r.end() - r.begin());
  });
}

void narrow(const Tensor& in, Tensor& out) {
  const float* src = in.data<float>();
  auto* dst = static_cast<uint16_t*>(out.raw());
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, in.numel(), 16384), [&](const tbb::blocked_range<int64_t>& r) {
    narrow_16(out.dtype(), src + r.begin(), dst + r.begin(), r.end() - r.begin());
  });
}

}  // namespace

HalfStorageLayer::HalfStorageLayer(const LayerRequest& request, MakeInner inner) {
  const Node& node = request.node;
  std::vector<const Tensor*> wide_ins;
  std::vector<Tensor*> wide_outs;
  auto stand_in = [&](const Tensor& t) {
    if (!storage_.empty() && storage_ != (t.dtype() == DType::BFloat16 ? "bf16" : "fp16"))
      throw Error(node.describe() + ": mixes bf16 and fp16 tensors");
    storage_ = t.dtype() == DType::BFloat16 ? "bf16" : "fp16";
    scratch_.push_back(std::make_unique<Tensor>(Tensor::empty(DType::Float32, t.shape())));
    return scratch_.back().get();
  };
  for (const Tensor* t : request.inputs) {
    if (!t || !is_half_type(t->dtype())) {
      wide_ins.push_back(t);
      continue;
    }
    Tensor* s = stand_in(*t);
    widen_.emplace_back(t, s);
    wide_ins.push_back(s);
  }
  for (Tensor* t : request.outputs) {
    if (!t || !is_half_type(t->dtype())) {
      wide_outs.push_back(t);
      continue;
    }
    Tensor* s = stand_in(*t);
    narrow_.emplace_back(s, t);
    wide_outs.push_back(s);
  }
  FB_CHECK(!storage_.empty(), "HalfStorageLayer without a 16-bit tensor: " + node.describe());
  inner_ = inner(LayerRequest{node, request.def, request.ops, std::move(wide_ins), std::move(wide_outs),
                              request.constant_inputs, request.host_constants, request.winograd});
}

void HalfStorageLayer::run() {
  for (const auto& [half, wide] : widen_) widen(*half, *wide);
  inner_->run();
  for (const auto& [wide, half] : narrow_) narrow(*wide, *half);
}

Tensor HalfStorageLayer::plain_copy(const Tensor& output) const {
  for (const auto& [wide, half] : narrow_) {
    if (half != &output) continue;
    Tensor out(output.dtype(), output.shape());
    narrow_half(inner_->plain_copy(*wide), out);
    return out;
  }
  return output.clone();
}

std::string HalfStorageLayer::kernel() const {
  return storage_ + "→f32 " + inner_->kernel() + " →" + storage_;
}

}  // namespace fb
