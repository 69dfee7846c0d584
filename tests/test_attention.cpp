// The float32 attention kernel against its definition in double (its softmax row passes,
// in every form this CPU runs: tests/test_isa_kernels.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/backend/cpu/attention.h"

namespace fb {
namespace {

std::vector<float> normal(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist;
  std::vector<float> x(n);
  for (float& e : x) e = dist(rng);
  return x;
}

// softmax(q·kᵀ·scale + mask)·v per batch item and head, in double.
std::vector<double> attention_in_double(const std::vector<float>& q, const std::vector<float>& k,
                                        const std::vector<float>& v, const std::vector<float>& mask, int64_t b,
                                        int64_t s, int64_t hidden, int64_t heads, double scale) {
  const int64_t d = hidden / heads;
  std::vector<double> out(q.size()), p(static_cast<size_t>(s), 0.0);
  for (int64_t n = 0; n < b; ++n)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < s; ++i) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < s; ++j) {
          double dot = 0;
          for (int64_t e = 0; e < d; ++e) dot += double(q[(n * s + i) * hidden + h * d + e]) * k[(n * s + j) * hidden + h * d + e];
          p[j] = dot * scale + mask[n * s + j];
          mx = std::max(mx, p[j]);
        }
        for (int64_t j = 0; j < s; ++j) sum += (p[j] = std::exp(p[j] - mx));
        for (int64_t e = 0; e < d; ++e) {
          double acc = 0;
          for (int64_t j = 0; j < s; ++j) acc += p[j] * v[(n * s + j) * hidden + h * d + e];
          out[(n * s + i) * hidden + h * d + e] = acc / sum;
        }
      }
  return out;
}

// Each batch item's scores here (2 heads of 300 x 300) exceed the kernel's 1 MB pass, so it
// takes the items one at a time: each pass must read its own q, k, v and mask rows and
// write its own output rows.
TEST(AttentionKernel, BatchTakenInPassesMatchesTheDefinition) {
  const int64_t b = 3, s = 300, hidden = 32, heads = 2;
  const std::vector<float> q = normal(b * s * hidden, 1), k = normal(b * s * hidden, 2), v = normal(b * s * hidden, 3);
  std::vector<float> mask(b * s, 0.f);
  for (int64_t n = 0; n < b; ++n)  // each item masks a different tail of its keys
    for (int64_t j = s - 40 * (n + 1); j < s; ++j) mask[n * s + j] = -1e4f;
  const Shape qs{b, s, hidden}, ms{b, 1, 1, s};
  const float scale = 1.f / std::sqrt(float(hidden / heads));
  std::vector<float> got(q.size());
  AttentionKernel(qs, qs, heads, scale, &ms).run(q.data(), k.data(), v.data(), got.data(), mask.data());
  const std::vector<double> want = attention_in_double(q, k, v, mask, b, s, hidden, heads, scale);
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - want[i]));
  EXPECT_LT(worst, 2e-5);
}

}  // namespace
}  // namespace fb
