#include "engine/backend/cpu/eager_region_layer.h"

#include <list>
#include <map>
#include <set>

#include "engine/backend/cpu/conv.h"
#include "engine/ops/subgraph.h"

namespace fb {

namespace {

// Input shapes kept per convolution: a detector's RoI count changes from image to image,
// and each new shape costs a primitive and a weight reorder (each kept kernel holds its
// reordered weights: a 256-channel 3x3 convolution's Winograd weights are about 9 MB).
constexpr size_t kShapesKept = 4;

class EagerRegionLayer : public Layer {
 public:
  explicit EagerRegionLayer(const LayerRequest& r)
      : node_(r.node), ctx_{node_, r.inputs, r.outputs, &r.ops}, body_(subgraph_attr(node_, "body")), winograd_(r.winograd) {
    // The region's constant inputs (the engine's initializers) by the body's names.
    const std::vector<std::string>& captures = capture_names(node_);
    const size_t first = explicit_input_count(node_);
    for (size_t j = 0; j < captures.size(); ++j)
      if (first + j < r.constant_inputs.size() && r.constant_inputs[first + j]) constant_.insert(captures[j]);
  }
  void run() override {
    try {
      std::map<std::string, Tensor> env = captured_values(ctx_);
      run_nodes(ctx_, body_, env, {}, [this](size_t i, const Node& n, const std::vector<const Tensor*>& ins, std::vector<Tensor>& outs) {
        return run_convolution(i, n, ins, outs);
      });
      // Always replaced, never copied into: the shapes may differ from one run to the next.
      for (size_t k = 0; k < body_.outputs.size() && k < ctx_.outputs.size(); ++k)
        if (ctx_.outputs[k]) *ctx_.outputs[k] = subgraph_value(env, body_.outputs[k]);
    } catch (const Error& e) {
      throw Error(node_.describe() + ": " + e.what());
    }
  }
  std::string kernel() const override { return "fusebench.EagerRegion"; }

 private:
  bool run_convolution(size_t i, const Node& n, const std::vector<const Tensor*>& ins, std::vector<Tensor>& outs) {
    if (!(n.domain.empty() && n.op_type == "Conv") || ins.size() < 2 || !ins[0] || !ins[1] || !constant_.count(n.inputs[1]))
      return false;
    const bool has_bias = ins.size() > 2 && ins[2];
    for (const Tensor* t : ins)
      if (t && t->dtype() != DType::Float32) return false;  // the op table's kernel says what is wrong
    if (has_bias && (ins[2]->rank() != 1 || ins[2]->shape()[0] != ins[1]->shape()[0])) return false;
    std::list<Kept>& kept = kernels_[i];
    auto it = kept.begin();
    while (it != kept.end() && it->x != ins[0]->shape()) ++it;
    if (it == kept.end()) {
      kept.push_front(
          Kept{ins[0]->shape(), std::make_unique<ConvKernel>(n, ins[0]->shape(), ins[1]->shape(), has_bias, true, nullptr, false, winograd_)});
      if (kept.size() > kShapesKept) kept.pop_back();
    } else {
      kept.splice(kept.begin(), kept, it);  // most recently used first
    }
    ConvKernel& k = *kept.front().kernel;
    Tensor y(DType::Float32, k.output_shape());
    k.run(ins[0]->raw(), ins[1]->data<float>(), has_bias ? ins[2]->data<float>() : nullptr, nullptr, y.raw());
    outs.clear();
    outs.push_back(std::move(y));
    return true;
  }

  struct Kept {
    Shape x;
    std::unique_ptr<ConvKernel> kernel;
  };
  Node node_;
  OpContext ctx_;
  const Graph& body_;
  std::set<std::string> constant_;
  std::map<size_t, std::list<Kept>> kernels_;  // by the convolution's index in the body
  bool winograd_;                              // the build's setting: kernels are made later
};

}  // namespace

std::unique_ptr<Layer> make_eager_region_layer(const LayerRequest& request) {
  return std::make_unique<EagerRegionLayer>(request);
}

}  // namespace fb
