// A layout-tied node the conv-layout pass marked channels-last (x_layout, y_layout), run by
// its plain layer over views of its tensors as what their bytes are: a 4-D [N, C, H, W]
// tensor kept channels-last is a plain [N, H, W, C] one. A Concat or Split over channels
// becomes one over the last axis, and a channel gate's [N, C, 1, 1] scale (the same bytes
// in either layout) broadcasts as [N, 1, 1, C].
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
    LayerRequest inner{node_, r.def, r.ops, r.inputs, r.outputs, r.constant_inputs, r.host_constants, r.winograd};
    for (const Tensor*& t : inner.inputs)
      if (t && t->rank() == 4) t = view(*t);
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
