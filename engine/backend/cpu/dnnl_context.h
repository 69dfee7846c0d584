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

}  // namespace fb
