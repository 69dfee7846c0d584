// Our own kernels' forms (engine/ops/isa_kernels.h) against each other: every form this CPU
// runs (on an AVX-512 machine: generic, AVX2 and AVX-512, so CI covers the AVX2 paths it
// would not otherwise choose) gives the generic form's values, exactly where the
// arithmetic is the same, within rounding where the sums run in another order. Then the
// choice itself through the binary: FUSEBENCH_ISA forces it down, the build log names it,
// and an engine run on each form gives the same outputs.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>
#include <random>
#include <unistd.h>
#include <vector>

#include "engine/ops/fast_math.h"
#include "engine/ops/isa_kernels.h"
#include "engine/util/cpu_features.h"
#include "harness/cases/tensor_file.h"
#include "shell_command.h"

namespace fb {
namespace {

namespace fs = std::filesystem;

constexpr KernelIsa kForms[] = {KernelIsa::Generic, KernelIsa::Avx2, KernelIsa::Avx512};

// The forms this CPU runs, each with its name for messages.
std::vector<const IsaKernels*> forms_here() {
  std::vector<const IsaKernels*> r;
  for (KernelIsa isa : kForms)
    if (const IsaKernels* k = isa_kernels_for(isa)) r.push_back(k);
  return r;
}

std::vector<float> normal(size_t n, uint32_t seed, float scale) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> x(n);
  for (float& e : x) e = scale * dist(rng);
  return x;
}

TEST(IsaKernels, EveryFormUpToTheBestThisCpuRunsIsOffered) {
  const KernelIsa best = best_kernel_isa_here();
  for (KernelIsa isa : kForms) {
    const IsaKernels* k = isa_kernels_for(isa);
    EXPECT_EQ(k != nullptr, isa <= best) << kernel_isa_name(isa);
    if (k) {
      EXPECT_EQ(k->isa, isa);
      EXPECT_NE(k->apply_table, nullptr) << kernel_isa_name(isa);
    }
  }
  std::printf("this CPU runs %s; forms tested: %zu\n", kernel_isa_name(best), forms_here().size());
}

TEST(IsaKernels, SoftmaxRowPassesGiveTheScalarFunctionsValuesAtEveryTailLength) {
  for (const IsaKernels* k : forms_here())
    for (int64_t n : {0, 1, 5, 7, 8, 9, 15, 16, 17, 31, 33, 128, 197}) {
      std::vector<float> x = normal(size_t(n) + 16, uint32_t(n) + 7, 30.f);  // down to exp(-120): past both cut-offs
      if (n > 3) x[2] = -INFINITY;
      const float guard = x[size_t(n)];  // past the row: must stay as it is
      const std::string where = std::string(kernel_isa_name(k->isa)) + " n " + std::to_string(n);
      EXPECT_EQ(k->softmax_row_max(x.data(), n), row_max(x.data(), n)) << where;
      const float mx = k->softmax_row_max(x.data(), n);
      std::vector<float> out(x);
      const float sum = k->softmax_exp_row(x.data(), out.data(), n, mx);
      double want_sum = 0;
      for (int64_t i = 0; i < n; ++i) {
        const float want = softmax_exp(x[i] - mx);
        want_sum += want;
        EXPECT_NEAR(out[i], want, 4e-7 * want) << where << " element " << i;
      }
      EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum) << where;
      EXPECT_EQ(out[size_t(n)], guard) << where;
      k->scale_row(out.data(), n, 0.5f);
      for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], 0.5f * softmax_exp(x[i] - mx), 4e-7 * softmax_exp(x[i] - mx)) << where;
      EXPECT_EQ(out[size_t(n)], guard) << where;
    }
  // A NaN is skipped by the max and stays NaN through the exp, as in the scalar functions.
  for (const IsaKernels* k : forms_here()) {
    std::vector<float> x{1.f, NAN, 3.f};
    EXPECT_EQ(k->softmax_row_max(x.data(), 3), 3.f) << kernel_isa_name(k->isa);
    std::vector<float> out(3);
    EXPECT_TRUE(std::isnan(k->softmax_exp_row(x.data(), out.data(), 3, 3.f))) << kernel_isa_name(k->isa);
    EXPECT_TRUE(std::isnan(out[1])) << kernel_isa_name(k->isa);
    EXPECT_EQ(out[2], 1.f) << kernel_isa_name(k->isa);
  }
}

// Round to nearest even, clamp, shift: the same bytes from every form, ties and both clamps included.
TEST(IsaKernels, QuantizeGivesTheGenericBytesExactly) {
  const IsaKernels& generic = *isa_kernels_for(KernelIsa::Generic);
  std::vector<float> x = normal(300, 3, 60.f);
  for (size_t i = 0; i < 40; ++i) x[i] = float(i) * 0.5f - 10.f;  // ties: -10, -9.5, ... round to even
  x[41] = 1e6f;
  x[42] = -1e6f;
  for (const IsaKernels* k : forms_here())
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 33, 300}) {
      const std::string where = std::string(kernel_isa_name(k->isa)) + " n " + std::to_string(n);
      std::vector<int8_t> s_want(size_t(n) + 1, 99), s_got(size_t(n) + 1, 99);
      generic.quantize_s8(x.data(), n, 1.f, -127.f, 127.f, 0.f, s_want.data());
      k->quantize_s8(x.data(), n, 1.f, -127.f, 127.f, 0.f, s_got.data());
      EXPECT_EQ(s_got, s_want) << where;
      EXPECT_EQ(s_got[size_t(n)], 99) << where;  // nothing written past the row
      for (int zero_point : {0, 100}) {
        std::vector<uint8_t> u_want(size_t(n) + 1, 99), u_got(size_t(n) + 1, 99);
        generic.quantize_u8(x.data(), n, 0.5f, float(-zero_point), float(255 - zero_point), float(zero_point), u_want.data());
        k->quantize_u8(x.data(), n, 0.5f, float(-zero_point), float(255 - zero_point), float(zero_point), u_got.data());
        EXPECT_EQ(u_got, u_want) << where << " zero point " << zero_point;
      }
    }
  std::vector<int8_t> ties(40);
  generic.quantize_s8(x.data(), 40, 1.f, -127.f, 127.f, 0.f, ties.data());
  EXPECT_EQ(ties[1], -10);  // -9.5 -> -10
  EXPECT_EQ(ties[3], -8);   // -8.5 -> -8
}

TEST(IsaKernels, ByteTablesLookUpEveryByte) {
  std::vector<uint8_t> table(256);
  for (int b = 0; b < 256; ++b) table[size_t(b)] = uint8_t(b * 37 + 11);
  for (const IsaKernels* k : forms_here())
    for (int64_t n : {0, 1, 63, 64, 65, 256, 1000}) {
      std::vector<uint8_t> bytes(size_t(n) + 1), want(size_t(n) + 1);
      for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 7 + 3);
      for (size_t i = 0; i < bytes.size(); ++i) want[i] = i < size_t(n) ? table[bytes[i]] : bytes[i];
      k->apply_table(bytes.data(), n, table.data());
      EXPECT_EQ(bytes, want) << kernel_isa_name(k->isa) << " n " << n;
    }
}

// Every channel count's tail, windows of 1x1 to 3x3, and NaNs where they decide the answer:
// one in the first pixel stays, one in a later pixel is skipped.
TEST(IsaKernels, WindowMaxGivesTheGenericValuesNaNsIncluded) {
  const IsaKernels& generic = *isa_kernels_for(KernelIsa::Generic);
  for (int64_t c : {1, 7, 8, 9, 16, 17, 31, 32, 33, 48, 63, 64, 65, 100}) {
    const int64_t h = 3, w = 3;
    std::vector<float> x = normal(size_t(h * w * c) + 16, uint32_t(c), 1.f);
    x[0] = NAN;                          // first pixel, channel 0: stays NaN
    x[size_t((w + 1) * c + c - 1)] = NAN;  // a later pixel, the last channel: skipped
    std::vector<const float*> rows;
    for (int64_t i = 0; i < h; ++i) rows.push_back(x.data() + i * w * c);
    const std::vector<int64_t> cols{0, c, 2 * c};
    for (const IsaKernels* k : forms_here())
      for (int64_t nh : {1, 3})
        for (int64_t nw : {1, 2, 3}) {
          std::vector<float> want(size_t(c) + 8, 7.f), got(size_t(c) + 8, 7.f);
          generic.window_max_nhwc(rows.data(), nh, cols.data(), nw, c, want.data());
          k->window_max_nhwc(rows.data(), nh, cols.data(), nw, c, got.data());
          const std::string where = std::string(kernel_isa_name(k->isa)) + " c " + std::to_string(c) + " window " +
                                    std::to_string(nh) + "x" + std::to_string(nw);
          EXPECT_TRUE(std::isnan(got[0])) << where;
          for (size_t i = 1; i < got.size(); ++i) EXPECT_EQ(got[i], want[i]) << where << " channel " << i;
        }
  }
}

std::string fusebench(const std::string& env, const std::string& args) {
  return env + " " + std::string(FUSEBENCH_BINARY) + " " + args;
}

TEST(IsaKernels, FusebenchIsaForcesTheChoiceAndIsRefusedWhenItCannot) {
  const Outcome generic = sh(fusebench("FUSEBENCH_ISA=generic", "inspect zoo:mlp"));
  ASSERT_EQ(generic.code, 0) << generic.output;
  EXPECT_NE(generic.output.find(std::string("own kernels: generic (FUSEBENCH_ISA=generic; this CPU runs ") +
                             kernel_isa_name(best_kernel_isa_here()) + ")"),
            std::string::npos)
      << generic.output;
  const Outcome bad = sh(fusebench("FUSEBENCH_ISA=avx9", "inspect zoo:mlp"));
  EXPECT_EQ(bad.code, 2) << bad.output;
  EXPECT_NE(bad.output.find("fusebench inspect: error: FUSEBENCH_ISA='avx9' is not a kernel instruction set: give "
                            "generic, avx2 or avx512"),
            std::string::npos)
      << bad.output;
  if (best_kernel_isa_here() != KernelIsa::Avx512) {
    const Outcome above = sh(fusebench("FUSEBENCH_ISA=avx512", "inspect zoo:mlp"));
    EXPECT_EQ(above.code, 2) << above.output;
    EXPECT_NE(above.output.find("FUSEBENCH_ISA=avx512: this CPU cannot run those kernels"), std::string::npos) << above.output;
  }
}

// A binary compiled for more than this CPU has says so and stops before anything compiled
// with those flags runs (FUSEBENCH_CPU_LACKS pretends this CPU lacks them).
TEST(IsaKernels, ACpuLackingWhatTheBinaryWasCompiledForIsToldWhichAndHow) {
  const std::vector<std::string> compiled = compiled_cpu_features();
  if (compiled.empty()) GTEST_SKIP() << "this binary was compiled for plain x86-64: any x86-64 CPU runs it";
  const Outcome o = sh(fusebench("FUSEBENCH_CPU_LACKS=" + compiled.back() + ",nosuch", "--version"));
  EXPECT_EQ(o.code, 2) << o.output;
  EXPECT_EQ(o.output, "fusebench: this binary was compiled for CPU features this CPU lacks: " + compiled.back() +
                          " (its -march, FUSEBENCH_ARCH, is the machine that built it). Build fusebench on this machine, "
                          "or configure it with -DFUSEBENCH_ARCH=x86-64-v3 for a binary that runs on any AVX2 machine.\n");
  const Outcome fine = sh(fusebench("FUSEBENCH_CPU_LACKS=nosuch", "--version"));
  EXPECT_EQ(fine.code, 0) << fine.output;
}

// Whole engines on each form: a channels-last MaxPool (ShuffleNet's stem) and attention's
// softmax (ViT), the same outputs within float rounding of the sums' order. (The int8
// quantizer and byte tables give the generic bytes exactly: above.)
TEST(IsaKernels, EnginesGiveTheSameOutputsOnEveryForm) {
  const fs::path dir = fs::temp_directory_path() / ("fb_isa_" + std::to_string(::getpid()));
  struct Model {
    const char* args;
    const char* output;
    double tolerance;  // relative to the largest output
  };
  for (const Model& m : {Model{"zoo:shufflenet --threads 2", "output", 1e-5}, Model{"zoo:vit --threads 2", "output", 1e-5}}) {
    std::vector<Tensor> outs;
    for (const IsaKernels* k : forms_here()) {
      const fs::path at = dir / kernel_isa_name(k->isa);
      const Outcome o =
          sh(fusebench(std::string("FUSEBENCH_ISA=") + kernel_isa_name(k->isa), std::string("exec ") + m.args + " --save-outputs " + at.string()));
      ASSERT_EQ(o.code, 0) << m.args << "\n" << o.output;
      outs.push_back(read_tensor_file((at / (std::string(m.output) + ".npy")).string()));
    }
    for (size_t f = 1; f < outs.size(); ++f) {
      ASSERT_EQ(outs[f].shape(), outs[0].shape());
      const float* a = outs[0].data<float>();
      const float* b = outs[f].data<float>();
      double largest = 0, worst = 0;
      for (int64_t i = 0; i < outs[0].numel(); ++i) {
        largest = std::max(largest, double(std::fabs(a[i])));
        worst = std::max(worst, double(std::fabs(a[i] - b[i])));
      }
      EXPECT_LE(worst, m.tolerance * largest) << m.args << ": " << kernel_isa_name(forms_here()[f]->isa) << " against generic";
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace fb
