// The CPU features a binary was compiled to use (its -march: FUSEBENCH_ARCH), and which of
// them this CPU has. A plan records those its binary targeted and those its own kernels'
// form needs (engine/ops/isa_kernels.h), and is refused where this CPU lacks one of them;
// the binary itself, started on such a CPU, stops before anything else runs and names them
// (cpu_features.cpp).
#pragma once
#include <string>
#include <vector>

namespace fb {

// The instruction-set extensions this binary was compiled for (from the compiler's
// predefined macros), by their __builtin_cpu_supports names, e.g. "avx2", "avx512f".
std::vector<std::string> compiled_cpu_features();

// Whether this CPU has the named feature; false for a name this fusebench does not know.
bool cpu_has_feature(const std::string& name);

}  // namespace fb
