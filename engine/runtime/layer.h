// An engine layer's executable form. Most layers run the op table's kernel on
// preallocated arena views; matrix products keep a prebuilt oneDNN primitive.
// Layers are created once at build time; run() allocates nothing.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/graph.h"

namespace fb {

class Layer {
 public:
  virtual ~Layer() = default;
  virtual void run() = 0;
  // The kernel that runs it, e.g. "onednn.matmul[gelu]" or "fusebench.LayerNorm".
  virtual std::string kernel() const = 0;
  // Floating-point operations of one run (0 where not counted).
  virtual double flops() const { return 0; }
  // A copy of one of this layer's outputs in ONNX's plain layout (a kernel may keep its
  // output in another one, e.g. channels-last between convolutions), for captures.
  virtual Tensor plain_copy(const Tensor& output) const { return output.clone(); }
};

// `inputs`/`outputs` point at the engine's slot tensors (stable for the engine's life);
// `weights_constant` says input 1 is an initializer, so a kernel may repack it once.
std::unique_ptr<Layer> make_layer(const Node& node, std::vector<const Tensor*> inputs, std::vector<Tensor*> outputs,
                                  bool weights_constant);

}  // namespace fb
