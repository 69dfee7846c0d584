#include "engine/util/cpu_features.h"

#include <cpuid.h>

namespace fb {

namespace {

struct Feature {
  const char* name;
  bool compiled;   // the compiler's macro for it was defined
  bool (*here)();  // __builtin_cpu_supports takes only a literal, hence one lambda each
};

#define FB_FEATURE(name, compiled) \
  Feature { name, compiled, [] { return __builtin_cpu_supports(name) != 0; } }

// clang before 16 knows no "f16c" for __builtin_cpu_supports: CPUID leaf 1, ECX bit 29.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

#ifdef __AVX__
constexpr bool kAvx = true;
#else
constexpr bool kAvx = false;
#endif
#ifdef __AVX2__
constexpr bool kAvx2 = true;
#else
constexpr bool kAvx2 = false;
#endif
#ifdef __FMA__
constexpr bool kFma = true;
#else
constexpr bool kFma = false;
#endif
#ifdef __F16C__
constexpr bool kF16c = true;
#else
constexpr bool kF16c = false;
#endif
#ifdef __BMI2__
constexpr bool kBmi2 = true;
#else
constexpr bool kBmi2 = false;
#endif
#ifdef __AVX512F__
constexpr bool kAvx512f = true;
#else
constexpr bool kAvx512f = false;
#endif
#ifdef __AVX512BW__
constexpr bool kAvx512bw = true;
#else
constexpr bool kAvx512bw = false;
#endif
#ifdef __AVX512DQ__
constexpr bool kAvx512dq = true;
#else
constexpr bool kAvx512dq = false;
#endif
#ifdef __AVX512CD__
constexpr bool kAvx512cd = true;
#else
constexpr bool kAvx512cd = false;
#endif
#ifdef __AVX512VL__
constexpr bool kAvx512vl = true;
#else
constexpr bool kAvx512vl = false;
#endif
#ifdef __AVX512VNNI__
constexpr bool kAvx512vnni = true;
#else
constexpr bool kAvx512vnni = false;
#endif
#ifdef __AVX512BF16__
constexpr bool kAvx512bf16 = true;
#else
constexpr bool kAvx512bf16 = false;
#endif
#ifdef __AVX512VBMI__
constexpr bool kAvx512vbmi = true;
#else
constexpr bool kAvx512vbmi = false;
#endif

const Feature kFeatures[] = {
    FB_FEATURE("avx", kAvx),           FB_FEATURE("avx2", kAvx2),           FB_FEATURE("fma", kFma),
    Feature{"f16c", kF16c, cpu_has_f16c},      FB_FEATURE("bmi2", kBmi2),           FB_FEATURE("avx512f", kAvx512f),
    FB_FEATURE("avx512bw", kAvx512bw), FB_FEATURE("avx512dq", kAvx512dq),   FB_FEATURE("avx512cd", kAvx512cd),
    FB_FEATURE("avx512vl", kAvx512vl), FB_FEATURE("avx512vnni", kAvx512vnni), FB_FEATURE("avx512bf16", kAvx512bf16),
    FB_FEATURE("avx512vbmi", kAvx512vbmi),
};

#undef FB_FEATURE

}  // namespace

std::vector<std::string> compiled_cpu_features() {
  std::vector<std::string> r;
  for (const Feature& f : kFeatures)
    if (f.compiled) r.push_back(f.name);
  return r;
}

bool cpu_has_feature(const std::string& name) {
  for (const Feature& f : kFeatures)
    if (name == f.name) return f.here();
  return false;
}

}  // namespace fb
