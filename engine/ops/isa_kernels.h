// Our own vector kernels, one form per instruction set, and the run-time choice among them.
// Which form runs depends on the CPU the binary runs on, never on the machine it was built
// on: each form lives in a file compiled for its instruction set alone
// (isa_kernels_avx512.cpp, isa_kernels_avx2.cpp, isa_kernels_generic.cpp; flags in
// engine/CMakeLists.txt), and isa_kernels() picks the best this CPU runs, or the one
// FUSEBENCH_ISA (generic, avx2, avx512) caps it at.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fb {

// generic: plain C++ at the binary's own flags; avx2: x86-64-v3 (AVX2, FMA, F16C); avx512:
// x86-64-v4 (AVX-512 F, BW, CD, DQ, VL), with AVX512_VBMI's byte tables where the CPU has it.
enum class KernelIsa { Generic, Avx2, Avx512 };

struct IsaKernels {
  KernelIsa isa;
  // The largest of x[0..n) (-inf for n = 0; NaNs skipped, as row_max).
  float (*softmax_row_max)(const float* x, int64_t n);
  // out[i] = softmax_exp(in[i] - mx) over the row (out may be in); returns their sum.
  float (*softmax_exp_row)(const float* in, float* out, int64_t n, float mx);
  // x[0..n) *= s.
  void (*scale_row)(float* x, int64_t n, float s);
  // out[i] = clamp(round-to-even(x[i] * inv_scale), lo, hi) + shift, as int8 or uint8 (in range).
  void (*quantize_s8)(const float* x, int64_t n, float inv_scale, float lo, float hi, float shift, int8_t* out);
  void (*quantize_u8)(const float* x, int64_t n, float inv_scale, float lo, float hi, float shift, uint8_t* out);
  // bytes[i] = table[bytes[i]] (a 256-entry table).
  void (*apply_table)(uint8_t* bytes, int64_t n, const uint8_t* table);
  // y[0..c) = the largest of each channel over the window's pixels rows[i] + cols[j]
  // (nh, nw >= 1), started from the first pixel and replaced only where larger, so a NaN
  // in the first pixel stays and a later one is skipped, as MaxPool's op kernel does.
  void (*window_max_nhwc)(const float* const* rows, int64_t nh, const int64_t* cols, int64_t nw, int64_t c, float* y);
};

// The form chosen for this process (FUSEBENCH_ISA read once). Throws, naming
// FUSEBENCH_ISA, for a value it does not know or one above what this CPU runs.
const IsaKernels& isa_kernels();

// The form for `isa`, or nullptr where this CPU cannot run it (tests compare the forms).
const IsaKernels* isa_kernels_for(KernelIsa isa);

// The best form this CPU runs.
KernelIsa best_kernel_isa_here();

const char* kernel_isa_name(KernelIsa isa);

// The CPU features a form needs, by their __builtin_cpu_supports names (plans record them).
std::vector<std::string> kernel_isa_cpu_features(KernelIsa isa);

// "avx512" or "avx2 (FUSEBENCH_ISA=avx2; this CPU runs avx512)": for build logs.
std::string kernel_isa_description();

}  // namespace fb
