// The eager reference on a device backend (a GPU), as PyTorch eager runs there: one layer
// per ONNX node, in fp32 (TF32 off), no fusion and no graph rewriting, each node one
// library call or kernel launch (cuBLASLt for MatMul/Gemm, cuDNN for convolutions, the
// backend's own kernels for the rest). Unlike the CPU's ReferenceExecutor it runs on the
// engine's planned arena: PyTorch's caching allocator hands an eager loop the same blocks
// every iteration, so steady-state eager pays no allocation either; outputs are never
// written over inputs (no in-place reuse), as eager ops do not.
#pragma once
#include <memory>

#include "engine/builder/builder.h"

namespace fb {

// `case_config`'s batch, shapes and device; everything else as eager.
std::unique_ptr<Engine> build_device_reference(const Graph& graph, const BuildConfig& case_config,
                                               std::shared_ptr<const OpRegistry> ops);

// What one timed run of `engine` took by the device's clock: its layers, plus the copies
// in and out when `with_copies` (Engine::last_device_times).
double device_ms(const Engine& engine, bool with_copies);

}  // namespace fb
