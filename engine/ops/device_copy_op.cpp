// fusebench.CopyToHost(x) and fusebench.CopyToDevice(x): the boundary between a device
// build's layers and the CPU fallback of a node its backend has no kernel for, inserted by
// the device-placement pass (engine/passes/device_placement.cpp). The engine runs them as
// copies between the device's memory and the host's (engine/runtime/device_copy_layer.h);
// as ops they are the identity, which is what the reference executor would compute.
#include <cstring>

#include "engine/ops/op_registry.h"

namespace fb {

namespace {

std::vector<ValueInfo> infer_copy(const ShapeContext& c) { return {ValueInfo{c.in(0).dtype, c.in(0).shape, true}}; }

void compute_copy(OpContext& c) { std::memcpy(c.out(0).raw(), c.in(0).raw(), c.in(0).nbytes()); }

}  // namespace

void register_device_copy_ops(OpRegistry& r) {
  r.add(OpDef{"fusebench", "CopyToHost", infer_copy, compute_copy});
  r.add(OpDef{"fusebench", "CopyToDevice", infer_copy, compute_copy});
}

}  // namespace fb
