#include "engine/backend/cpu/dnnl_context.h"

#include <cstdlib>
#include <cstring>

namespace fb {

dnnl::engine& dnnl_cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& dnnl_cpu_stream() {
  static dnnl::stream s(dnnl_cpu_engine());
  return s;
}

const char* dnnl_isa_name() {
  using isa = dnnl::cpu_isa;
  switch (dnnl::get_effective_cpu_isa()) {
    case isa::sse41: return "sse41";
    case isa::avx: return "avx";
    case isa::avx2: return "avx2";
    case isa::avx2_vnni: return "avx2_vnni";
    case isa::avx512_mic: return "avx512_mic";
    case isa::avx512_mic_4ops: return "avx512_mic_4ops";
    case isa::avx512_core: return "avx512_core";
    case isa::avx512_core_vnni: return "avx512_core_vnni";
    case isa::avx512_core_bf16: return "avx512_core_bf16";
    case isa::avx512_core_amx: return "avx512_core_amx";
    default: return "unknown";
  }
}

bool dnnl_has_bf16_kernels() {
  const auto i = dnnl::get_effective_cpu_isa();
  return i == dnnl::cpu_isa::avx512_core_bf16 || i == dnnl::cpu_isa::avx512_core_amx;
}

bool use_onednn_bf16() {
  const char* v = std::getenv("FUSEBENCH_ONEDNN_BF16");
  if (v && std::strcmp(v, "1") == 0) return true;
  if (v && std::strcmp(v, "0") == 0) return false;
  return dnnl_has_bf16_kernels();
}

}  // namespace fb
