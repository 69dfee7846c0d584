// An engine layer's executable form, as a backend makes it (engine/backend/backend.h).
// Layers are created once at build time on the engine's slot tensors; run() allocates
// nothing.
#pragma once
#include <string>

#include "engine/ir/tensor.h"

namespace fb {

class Layer {
 public:
  virtual ~Layer() = default;
  // May return before the work is done on an asynchronous backend: Backend::synchronize waits.
  virtual void run() = 0;
  // The kernel that runs it, e.g. "onednn.matmul[gelu]" or "fusebench.LayerNorm".
  virtual std::string kernel() const = 0;
  // Floating-point operations of one run (0 where not counted).
  virtual double flops() const { return 0; }
  // A host copy of one of this layer's outputs in ONNX's plain layout (a kernel may keep
  // its output in another one, e.g. channels-last between convolutions), for captures.
  virtual Tensor plain_copy(const Tensor& output) const { return output.clone(); }
};

}  // namespace fb
