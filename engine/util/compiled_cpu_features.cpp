// What this binary was compiled for, from the compiler's predefined macros: compiled with
// the tree's flags (FUSEBENCH_ARCH), unlike cpu_features.cpp, which must run on any x86-64.
#include <string>
#include <vector>

#include "engine/util/cpu_features.h"

namespace fb {

// Data only (no code runs to make it): the startup check reads it before anything compiled
// with these flags has run.
extern const char* const kCompiledCpuFeatures[] = {
#ifdef __AVX__
    "avx",
#endif
#ifdef __AVX2__
    "avx2",
#endif
#ifdef __FMA__
    "fma",
#endif
#ifdef __F16C__
    "f16c",
#endif
#ifdef __BMI2__
    "bmi2",
#endif
#ifdef __AVX512F__
    "avx512f",
#endif
#ifdef __AVX512BW__
    "avx512bw",
#endif
#ifdef __AVX512DQ__
    "avx512dq",
#endif
#ifdef __AVX512CD__
    "avx512cd",
#endif
#ifdef __AVX512VL__
    "avx512vl",
#endif
#ifdef __AVX512VNNI__
    "avx512vnni",
#endif
#ifdef __AVX512BF16__
    "avx512bf16",
#endif
#ifdef __AVX512VBMI__
    "avx512vbmi",
#endif
    nullptr};

std::vector<std::string> compiled_cpu_features() {
  std::vector<std::string> r;
  for (const char* const* f = kCompiledCpuFeatures; *f; ++f) r.push_back(*f);
  return r;
}

}  // namespace fb
