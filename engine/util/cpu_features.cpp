// Which features this CPU has, and the check that refuses, before anything else runs, a CPU
// lacking one this binary was compiled for. Compiled for plain x86-64 (engine/CMakeLists.txt)
// so that it runs there; the check uses no inline library code, whose copy the linker
// might take from a file compiled for more.
#include "engine/util/cpu_features.h"

#include <cpuid.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace fb {

extern const char* const kCompiledCpuFeatures[];

namespace {

struct Feature {
  const char* name;
  bool (*here)();  // __builtin_cpu_supports takes only a literal, hence one lambda each
};

#define FB_FEATURE(name) \
  Feature { name, [] { return __builtin_cpu_supports(name) != 0; } }

// clang before 16 knows no "f16c" for __builtin_cpu_supports: CPUID leaf 1, ECX bit 29.
bool cpu_has_f16c() {
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}

const Feature kFeatures[] = {
    FB_FEATURE("avx"),        FB_FEATURE("avx2"),     FB_FEATURE("fma"),        Feature{"f16c", cpu_has_f16c},
    FB_FEATURE("bmi2"),       FB_FEATURE("avx512f"),  FB_FEATURE("avx512bw"),   FB_FEATURE("avx512dq"),
    FB_FEATURE("avx512cd"),   FB_FEATURE("avx512vl"), FB_FEATURE("avx512vnni"), FB_FEATURE("avx512bf16"),
    FB_FEATURE("avx512vbmi"),
};

#undef FB_FEATURE

// TEST HOOK: FUSEBENCH_CPU_LACKS=avx2,... makes this CPU lack those features, to check
// what a smaller CPU is told (tests/test_isa_kernels.cpp).
bool pretended_lacking(const char* name) {
  const char* list = std::getenv("FUSEBENCH_CPU_LACKS");
  const size_t len = std::strlen(name);
  for (const char* p = list; p && *p; p = std::strchr(p, ',') ? std::strchr(p, ',') + 1 : nullptr)
    if (std::strncmp(p, name, len) == 0 && (p[len] == ',' || p[len] == '\0')) return true;
  return false;
}

bool has(const char* name) {
  if (pretended_lacking(name)) return false;
  for (const Feature& f : kFeatures)
    if (std::strcmp(name, f.name) == 0) return f.here();
  return false;
}

// Priority 101: before the static constructors of everything compiled with the tree's flags,
// which may already use the instructions in question (a CPU without them would stop there
// with an illegal instruction and no word of why).
__attribute__((constructor(101))) void refuse_a_cpu_this_binary_cannot_run() {
  __builtin_cpu_init();
  char lacking[256] = "";
  for (const char* const* f = kCompiledCpuFeatures; *f; ++f)
    if (!has(*f) && std::strlen(lacking) + std::strlen(*f) + 3 < sizeof lacking) {
      if (lacking[0]) std::strcat(lacking, ", ");
      std::strcat(lacking, *f);
    }
  if (!lacking[0]) return;
  char msg[768];
  const int n = std::snprintf(msg, sizeof msg,
                              "fusebench: this binary was compiled for CPU features this CPU lacks: %s (its -march, "
                              "FUSEBENCH_ARCH, is the machine that built it). Build fusebench on this machine, or "
                              "configure it with -DFUSEBENCH_ARCH=x86-64-v3 for a binary that runs on any AVX2 machine.\n",
                              lacking);
  if (n > 0) {
    const ssize_t written = write(2, msg, size_t(n) < sizeof msg ? size_t(n) : sizeof msg - 1);
    (void)written;  // with stderr gone there is no one to tell
  }
  _exit(2);
}

}  // namespace

bool cpu_has_feature(const std::string& name) { return has(name.c_str()); }

}  // namespace fb
