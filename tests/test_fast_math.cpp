// The vectorizable float functions against libm over their whole useful range: the bounds
// here are the ones fast_math.h promises.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/ops/fast_math.h"

namespace fb {
namespace {

TEST(FastMath, ExpRelativeErrorUnder2e7) {
  double worst = 0;
  for (float x = -87.f; x <= 88.f; x += 0.0137f) {
    const double want = std::exp(double(x));
    worst = std::max(worst, std::fabs(double(fast_exp(x)) - want) / want);
  }
  EXPECT_LT(worst, 2e-7);
  // Below the range exactly 0 (a masked score, -3.4e38, must not leave a tiny normal
  // that a softmax's division turns into a denormal); at its edge still a normal float.
  EXPECT_EQ(fast_exp(-200.f), 0.f);
  EXPECT_EQ(fast_exp(-3.4e38f), 0.f);
  EXPECT_EQ(fast_exp(-INFINITY), 0.f);
  EXPECT_EQ(std::fpclassify(fast_exp(-87.2f)), FP_NORMAL);
  EXPECT_EQ(fast_exp(1000.f), fast_exp(88.3f));  // clamped above
}

TEST(FastMath, RowMaxIsTheLargestAndSkipsNaN) {
  std::vector<float> x(1000);
  for (size_t i = 0; i < x.size(); ++i) x[i] = std::sin(float(i)) * 100.f;
  x[613] = 250.f;
  EXPECT_EQ(row_max(x.data(), int64_t(x.size())), 250.f);
  EXPECT_EQ(row_max(x.data(), 613), *std::max_element(x.begin(), x.begin() + 613));
  x[7] = NAN;
  EXPECT_EQ(row_max(x.data(), int64_t(x.size())), 250.f);
  EXPECT_EQ(row_max(x.data(), 0), -INFINITY);
}

TEST(FastMath, SoftmaxExpLeavesNoDenormalAfterTheRowDivision) {
  EXPECT_EQ(softmax_exp(-70.f), 0.f);
  EXPECT_NEAR(softmax_exp(-68.f), std::exp(-68.0), 2e-7 * std::exp(-68.0));
  EXPECT_EQ(softmax_exp(0.f), 1.f);
  // The smallest term it keeps, divided by a row sum of 2^26 ones, is still a normal float.
  EXPECT_EQ(std::fpclassify(softmax_exp(-68.99f) / float(1 << 26)), FP_NORMAL);
}

TEST(FastMath, ErfWithinItsBoundsEverywhere) {
  double worst_small_rel = 0, worst_abs = 0;
  for (float x = -10.f; x <= 10.f; x += 0.00071f) {
    const double want = std::erf(double(x)), got = fast_erf(x);
    worst_abs = std::max(worst_abs, std::fabs(got - want));
    if (std::fabs(x) < 0.5f && x != 0.f) worst_small_rel = std::max(worst_small_rel, std::fabs(got - want) / std::fabs(want));
  }
  EXPECT_LT(worst_small_rel, 2e-7);
  EXPECT_LT(worst_abs, 4e-7);
  EXPECT_EQ(fast_erf(0.f), 0.f);
  EXPECT_EQ(fast_erf(-3.f), -fast_erf(3.f));  // odd
  EXPECT_NEAR(fast_erf(1e-6f), 1.1283791670955e-6, 2e-7 * 1.13e-6);  // tiny x: relative bound holds
}

}  // namespace
}  // namespace fb
