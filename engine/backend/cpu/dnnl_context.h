// The process-wide oneDNN CPU engine and stream. oneDNN (Debian's build runs on OpenMP)
// takes its thread count from the calling thread's OpenMP setting; ThreadScope sets it.
#pragma once
#include <oneapi/dnnl/dnnl.hpp>

namespace fb {

dnnl::engine& dnnl_cpu_engine();
dnnl::stream& dnnl_cpu_stream();

}  // namespace fb
