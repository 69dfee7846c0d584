#include "engine/backend/cpu/dnnl_context.h"

namespace fb {

dnnl::engine& dnnl_cpu_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& dnnl_cpu_stream() {
  static dnnl::stream s(dnnl_cpu_engine());
  return s;
}

}  // namespace fb
