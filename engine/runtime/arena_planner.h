// Activation memory planning. Every value the engine computes lives in one buffer (its
// root): views (Reshape and friends) share their input's root, and an in-place layer's
// output may take over the buffer of an input that dies at that layer. Each arena root is
// live from the layer that first writes it to the last layer that reads it or any value
// sharing it; roots live at the same time never overlap. Offsets are assigned greedily
// by size (largest first, lowest fitting offset), as TensorRT-style planners do; within a
// few percent of optimal on transformer and CNN graphs.
#pragma once
#include <cstddef>
#include <vector>

#include "engine/ir/dtype.h"
#include "engine/ir/shape.h"

namespace fb {

struct BufferLife {
  size_t bytes;
  int first;  // index of the producing layer, >= 0
  int last;   // index of the last consuming layer (inclusive), >= first
};

// Offsets (64-byte aligned) per buffer, and the total arena size.
std::vector<size_t> plan_arena(const std::vector<BufferLife>& buffers, size_t* total_bytes);

// One value as the planner sees it.
struct PlanValue {
  enum class Home { Arena, Input, Initializer };
  Home home = Home::Arena;  // where its bytes come from when it is not a view
  DType dtype = DType::Undefined;
  Shape shape;
  size_t bytes = 0;
  bool kept = false;  // a graph output (or every value under mark-all): lives past the last layer
  // In host memory though the engine's arena is a device's: a CPU fallback layer's value,
  // planned in a second arena of its own (views and in-place reuse never cross the two).
  bool host = false;
};

// One layer: the values it reads and writes (-1 for an omitted one), in order.
struct PlanLayer {
  std::vector<int> inputs, outputs;
  bool view = false;      // output 0 is input 0's bytes (OpDef::alias_input0)
  bool in_place = false;  // output 0 may overwrite an input of its shape and dtype (OpDef::in_place)
  // ... only this input (-1: any): a plugin's promise is about input 0, a convolution may
  // take over the residual it sums but never x, whose neighbours it reads.
  int in_place_only = -1;
};

struct ActivationPlan {
  std::vector<int> root;            // per value: the value that owns its buffer (itself when it owns one)
  std::vector<size_t> offset;       // per value: its root's offset in its arena (arena roots only)
  std::vector<int> in_place_input;  // per layer: the input whose buffer output 0 took over, or -1
  size_t arena_bytes = 0;
  size_t host_arena_bytes = 0;      // the host values' arena (PlanValue::host)
  int in_place_layers = 0;
};

// In place is legal for layer i over input v when the layer is in_place, output 0 has
// v's shape and dtype, v's root is an arena buffer (not a graph input or initializer,
// nor a view of one) of the same size that is not kept, and no later layer reads that
// root through any value. A layer limited to one input (in_place_only) must not read
// that buffer through any other operand, even the same value. `allow_in_place` false
// plans without it (for comparison).
ActivationPlan plan_activations(const std::vector<PlanValue>& values, const std::vector<PlanLayer>& layers,
                                bool allow_in_place);

}  // namespace fb
