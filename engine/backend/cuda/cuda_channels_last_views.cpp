// A layout-tied node the conv-layout pass marked channels-last (x_layout, y_layout), run by
// its plain layer over views of its tensors as what their bytes are: a 4-D [N, C, H, W]
// tensor kept channels-last is a plain [N, H, W, C] one. A Concat or Split over channels
// becomes one over the last axis, a channel gate's [N, C, 1, 1] scale (the same bytes in
// either layout) broadcasts as [N, 1, 1, C], and a Resize's roi, scales and sizes (build-time
// constants, one entry per dim) are permuted as the dims are.
#include <cstring>

#include "engine/backend/cuda/cuda_layer_table.h"
#include "engine/ops/fused_conv.h"

namespace fb::cuda {

namespace {

Shape channels_moved_last(const Shape& s) {
  Shape t{s[0]};
  t.insert(t.end(), s.begin() + 2, s.end());
  t.push_back(s[1]);
  return t;
}

// A 1-D constant of one entry per dim of a 4-D tensor ([N, C, H, W] order), or two such
// (a Resize's roi: starts, then ends), in [N, H, W, C] order.
Tensor per_dim_moved_last(const Tensor& t, const Node& n) {
  if (t.rank() != 1 || (t.numel() != 4 && t.numel() != 8))
    throw Error(n.describe() + ": a channels-last Resize takes one roi, scale or size per dim of its 4-D input");
  Tensor out = t.clone();
  const size_t es = dtype_size(t.dtype());
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t half = 0; half < t.numel(); half += 4)
    for (int64_t d = 0; d < 4; ++d) {
      const int64_t from = d == 0 ? 0 : d == 3 ? 1 : d + 1;  // N, H, W, C read from N, C, H, W
      std::memcpy(dst + size_t(half + d) * es, src + size_t(half + from) * es, es);
    }
  return out;
}

class OnChannelsLastViews final : public Layer {
 public:
  OnChannelsLastViews(const LayerRequest& r, const CudaContext& ctx, LayerMaker make) : node_(r.node) {
    node_.attrs.erase("x_layout");
    node_.attrs.erase("y_layout");
    if (node_.has_attr("axis")) {
      const int64_t axis = node_.attr_int("axis", 0);
      if (axis != 1 && axis != -3) throw Error(r.node.describe() + ": a channels-last layer concatenates or splits channels only");
      node_.attrs["axis"] = Attribute{int64_t(3)};
    }
    LayerRequest inner{node_, r.def, r.ops, r.inputs, r.outputs, r.constant_inputs, r.host_constants, r.winograd,
                       r.time_algorithms, r.cuda_graph};
    for (const Tensor*& t : inner.inputs)
      if (t && t->rank() == 4) t = view(*t);
    if (node_.domain.empty() && node_.op_type == "Resize")
      for (size_t i = 1; i < inner.host_constants.size(); ++i)
        if (const Tensor* c = inner.host_constants[i]) {
          constants_.push_back(std::make_unique<Tensor>(per_dim_moved_last(*c, r.node)));
          inner.host_constants[i] = constants_.back().get();
        }
    for (Tensor*& t : inner.outputs)
      if (t && t->rank() == 4) t = view(*t);
    inner_ = make(inner, ctx);
  }
  void run() override { inner_->run(); }
  std::string kernel() const override { return inner_->kernel() + " nhwc→nhwc"; }
  double flops() const override { return inner_->flops(); }
  Tensor plain_copy(const Tensor& output) const override { return inner_->plain_copy(output); }

 private:
  Tensor* view(const Tensor& t) {
    views_.push_back(
        std::make_unique<Tensor>(Tensor::view(t.dtype(), channels_moved_last(t.shape()), const_cast<void*>(t.raw()), Device::Cuda)));
    return views_.back().get();
  }

  Node node_;                                   // the node as its plain twin; the inner layer may keep a reference
  std::vector<std::unique_ptr<Tensor>> views_;  // stable addresses: the inner layer keeps pointers
  std::vector<std::unique_ptr<Tensor>> constants_;  // a Resize's, permuted (read while the inner layer is made)
  std::unique_ptr<Layer> inner_;
};

}  // namespace

std::unique_ptr<Layer> make_on_channels_last_views(const LayerRequest& r, const CudaContext& ctx, LayerMaker make) {
  return std::make_unique<OnChannelsLastViews>(r, ctx, make);
}

bool over_channels(const Node& n) {
  const int64_t axis = n.attr_int("axis", 0);
  return axis == 1 || axis == -3;
}

}  // namespace fb::cuda
