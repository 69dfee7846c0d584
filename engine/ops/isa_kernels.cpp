#include "engine/ops/isa_kernels.h"

#include <cstdlib>

#include "engine/ir/error.h"
#include "engine/util/cpu_features.h"

namespace fb {

// Defined each in the file compiled for its instruction set.
extern const IsaKernels kIsaKernelsGeneric, kIsaKernelsAvx2, kIsaKernelsAvx512;
void apply_table_avx512vbmi(uint8_t* bytes, int64_t n, const uint8_t* table);

namespace {

bool cpu_runs(KernelIsa isa) {
  for (const std::string& f : kernel_isa_cpu_features(isa))
    if (!cpu_has_feature(f)) return false;
  return true;
}

constexpr KernelIsa kAll[] = {KernelIsa::Generic, KernelIsa::Avx2, KernelIsa::Avx512};

KernelIsa chosen_isa() {
  const char* env = std::getenv("FUSEBENCH_ISA");
  const KernelIsa best = best_kernel_isa_here();
  if (!env || !*env) return best;
  for (KernelIsa isa : kAll)
    if (std::string(env) == kernel_isa_name(isa)) {
      if (isa > best)
        throw Error(std::string("FUSEBENCH_ISA=") + env + ": this CPU cannot run those kernels (it runs " +
                    kernel_isa_name(best) + " at most)");
      return isa;
    }
  throw Error(std::string("FUSEBENCH_ISA='") + env + "' is not a kernel instruction set: give generic, avx2 or avx512");
}

// The vector forms leave byte tables to AVX512_VBMI (Ice Lake, Zen 4 on: beyond the avx512
// level) where the CPU has it, and to the generic loop elsewhere.
IsaKernels with_byte_tables(IsaKernels k) {
  k.apply_table = k.isa == KernelIsa::Avx512 && cpu_has_feature("avx512vbmi") ? apply_table_avx512vbmi
                                                                                : kIsaKernelsGeneric.apply_table;
  return k;
}

}  // namespace

KernelIsa best_kernel_isa_here() {
  static const KernelIsa best = cpu_runs(KernelIsa::Avx512) ? KernelIsa::Avx512
                                : cpu_runs(KernelIsa::Avx2) ? KernelIsa::Avx2
                                                            : KernelIsa::Generic;
  return best;
}

const IsaKernels* isa_kernels_for(KernelIsa isa) {
  static const IsaKernels avx2 = with_byte_tables(kIsaKernelsAvx2), avx512 = with_byte_tables(kIsaKernelsAvx512);
  if (!cpu_runs(isa)) return nullptr;
  switch (isa) {
    case KernelIsa::Generic: return &kIsaKernelsGeneric;
    case KernelIsa::Avx2: return &avx2;
    case KernelIsa::Avx512: return &avx512;
  }
  return nullptr;
}

const IsaKernels& isa_kernels() {
  static const IsaKernels* chosen = isa_kernels_for(chosen_isa());
  return *chosen;
}

const char* kernel_isa_name(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Generic: return "generic";
    case KernelIsa::Avx2: return "avx2";
    case KernelIsa::Avx512: return "avx512";
  }
  return "?";
}

std::vector<std::string> kernel_isa_cpu_features(KernelIsa isa) {
  switch (isa) {
    case KernelIsa::Generic: return {};
    case KernelIsa::Avx2: return {"avx2", "fma", "f16c"};
    case KernelIsa::Avx512: return {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"};
  }
  return {};
}

std::string kernel_isa_description() {
  const KernelIsa isa = isa_kernels().isa, best = best_kernel_isa_here();
  std::string s = kernel_isa_name(isa);
  if (isa == KernelIsa::Avx512 && isa_kernels().apply_table == apply_table_avx512vbmi) s += " (with avx512vbmi)";
  if (isa != best) s += std::string(" (FUSEBENCH_ISA=") + kernel_isa_name(isa) + "; this CPU runs " + kernel_isa_name(best) + ")";
  return s;
}

}  // namespace fb
