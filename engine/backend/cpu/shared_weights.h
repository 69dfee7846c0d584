// Constant weights reordered into a kernel's layout (a matmul's packed B, a convolution's
// blocked filters), shared by every layer that reorders the same constant into the same
// layout: the execution contexts of one engine (Engine::make_context makes each one's
// layers afresh; a load case's pool would otherwise hold one packed copy per instance) and
// the engines one model builds for other batches. The key is the constant's address and
// both layouts; an entry lives while some layer keeps what it got, and while it lives the
// constant's storage does too (the layer's engine holds it), so an address is never
// mistaken for another constant's. Safe from several threads: a pool's instances make
// their first runs at once. Not shared yet: an int8 convolution's or matmul's quantized
// filters (quantized when the layer is made) and a transposed convolution's.
#pragma once
#include <memory>

#include <oneapi/dnnl/dnnl.hpp>

namespace fb {

// `constant` (laid out as `given`) reordered into `wanted`: made by this call, or the copy
// a living layer already made.
std::shared_ptr<const dnnl::memory> shared_reordered_weights(const void* constant, const dnnl::memory::desc& given,
                                                             const dnnl::memory::desc& wanted);

// How many reordered copies are alive now (for tests).
size_t live_reordered_weights();

}  // namespace fb
