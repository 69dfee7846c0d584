// A bf16 or fp16 layer whose kernel computes in float32 (on this CPU, oneDNN 2.6 has no
// bf16 or fp16 matmul or convolution without AVX-512: it dispatches AVX2). Its 16-bit
// inputs are widened into float32 scratch buffers the layer owns, the float32 kernel runs
// on them, and its float outputs are narrowed back into the 16-bit arena slots, so the
// tensors between layers stay 16-bit and the layer's numbers are those of 16-bit storage.
// Scratch is allocated once at build; run() allocates nothing.
#pragma once
#include <memory>
#include <vector>

#include "engine/backend/backend.h"

namespace fb {

class HalfStorageLayer : public Layer {
 public:
  // `inner` makes the float32 layer for the request with its 16-bit tensors replaced by
  // float32 scratch.
  using MakeInner = std::unique_ptr<Layer> (*)(const LayerRequest&);
  HalfStorageLayer(const LayerRequest& request, MakeInner inner);
  void run() override;
  std::string kernel() const override;
  double flops() const override { return inner_->flops(); }
  // The inner layer's plain copy of the output's float32 scratch, narrowed: a channels-last
  // convolution's output comes out in NCHW, as the float32 layer's would.
  Tensor plain_copy(const Tensor& output) const override;

 private:
  std::vector<std::unique_ptr<Tensor>> scratch_;               // float32 stand-ins, addresses stable
  std::vector<std::pair<const Tensor*, Tensor*>> widen_;       // 16-bit input -> its scratch
  std::vector<std::pair<const Tensor*, Tensor*>> narrow_;      // scratch -> 16-bit output
  std::unique_ptr<Layer> inner_;
  std::string storage_;  // "bf16" or "fp16"
};

}  // namespace fb
