// The float32 attention kernel against its definition in double, and the softmax row passes
// it runs against fast_math.h's scalar functions.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "engine/backend/cpu/attention.h"
#include "engine/ops/softmax_row.h"

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

TEST(SoftmaxRow, PassesGiveTheScalarFunctionsValuesAtEveryTailLength) {
  for (int64_t n : {0, 1, 5, 15, 16, 17, 31, 33, 128, 197}) {
    std::vector<float> x = normal(size_t(n) + 16, uint32_t(n) + 7);
    for (float& e : x) e *= 30.f;  // down to exp(-120): past both cut-offs
    if (n > 3) x[2] = -INFINITY;
    const float guard = x[size_t(n)];  // past the row: must stay as it is
    EXPECT_EQ(softmax_row_max(x.data(), n), row_max(x.data(), n)) << n;
    const float mx = softmax_row_max(x.data(), n);
    std::vector<float> out(x);
    const float sum = softmax_exp_row(x.data(), out.data(), n, mx);
    double want_sum = 0;
    for (int64_t i = 0; i < n; ++i) {
      const float want = softmax_exp(x[i] - mx);
      want_sum += want;
      EXPECT_NEAR(out[i], want, 4e-7 * want) << "n " << n << " element " << i;
    }
    EXPECT_NEAR(sum, want_sum, 1e-6 * want_sum) << n;
    EXPECT_EQ(out[size_t(n)], guard) << n;
    scale_row(out.data(), n, 0.5f);
    for (int64_t i = 0; i < n; ++i) EXPECT_NEAR(out[i], 0.5f * softmax_exp(x[i] - mx), 4e-7 * softmax_exp(x[i] - mx));
    EXPECT_EQ(out[size_t(n)], guard) << n;
  }
  // A NaN is skipped by the max and stays NaN through the exp, as in the scalar functions.
  std::vector<float> x{1.f, NAN, 3.f};
  EXPECT_EQ(softmax_row_max(x.data(), 3), 3.f);
  std::vector<float> out(3);
  EXPECT_TRUE(std::isnan(softmax_exp_row(x.data(), out.data(), 3, 3.f)));
  EXPECT_TRUE(std::isnan(out[1]));
  EXPECT_EQ(out[2], 1.f);
}

}  // namespace
}  // namespace fb
