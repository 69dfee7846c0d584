#include "engine/backend/cpu/cpu_kernels.h"

#include <mutex>

#include "engine/backend/cpu/attention.h"
#include "engine/backend/cpu/conv.h"
#include "engine/backend/cpu/matmul.h"

namespace fb {

void bind_cpu_kernels() {
  static std::once_flag bound;
  std::call_once(bound, [] {
    bind_cpu_conv_kernels();
    bind_cpu_matmul_kernels();
    bind_cpu_attention_kernels();
  });
}

}  // namespace fb
