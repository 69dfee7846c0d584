// The process-wide oneDNN CPU engine and stream. oneDNN (Debian's build runs on OpenMP)
// takes its thread count from the calling thread's OpenMP setting; ThreadScope sets it.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

namespace fb {

dnnl::engine& dnnl_cpu_engine();
dnnl::stream& dnnl_cpu_stream();

// The instruction set oneDNN dispatches to on this CPU ("avx2", "avx512_core_bf16", ...),
// and whether it has bf16 matmul and convolution kernels there (AVX512_BF16 or better).
const char* dnnl_isa_name();
bool dnnl_has_bf16_kernels();

// Whether bf16 layers run oneDNN's bf16 matmul, attention and convolution kernels (bf16
// in and out, float32 accumulation) instead of widening their inputs for float32 ones.
// By default: where the CPU has bf16 dot products (AVX512_BF16, AMX). The environment
// variable FUSEBENCH_ONEDNN_BF16=1 asks for them anyway (plain AVX-512 emulates them, about
// 5x slower than float32: for tests and for checking the bf16 kernels' numbers anywhere),
// =0 never (to time the widening path against them on bf16 hardware). Read at each call,
// so it applies to the layers made after it changes.
bool use_onednn_bf16();

}  // namespace fb
