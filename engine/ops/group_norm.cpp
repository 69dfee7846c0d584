// Group normalization (engine/ops/group_norm.h) and the op that runs it fused,
// fusebench.GroupNorm(x, group_scale?, group_bias?, channel_scale?, channel_bias?) with
// attributes groups, epsilon and activation ("" or "silu"); engine/passes/group_norm_fusion.cpp
// makes it.
#include "engine/ops/group_norm.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>

#include "engine/ops/fast_math.h"
#include "engine/ops/nn_common.h"

namespace fb {

namespace {

// Sums in float lanes over blocks this long, and the block sums in double: vector speed,
// and a million-element group still sums to float accuracy.
constexpr int64_t kSumBlock = 4096;

double block_sum(const float* x, int64_t len) {
  double total = 0;
  for (int64_t at = 0; at < len; at += kSumBlock) {
    const int64_t end = std::min(len, at + kSumBlock);
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = at; i < end; ++i) s += x[i];
    total += s;
  }
  return total;
}

double block_squared_deviation(const float* x, int64_t len, float mean) {
  double total = 0;
  for (int64_t at = 0; at < len; at += kSumBlock) {
    const int64_t end = std::min(len, at + kSumBlock);
    float s = 0.f;
#pragma omp simd reduction(+ : s)
    for (int64_t i = at; i < end; ++i) s += (x[i] - mean) * (x[i] - mean);
    total += s;
  }
  return total;
}

}  // namespace

void group_norm(const float* x, float* y, const GroupNormArgs& a) {
  const int64_t per_group = a.groups ? a.channels / a.groups : 0, len = per_group * a.inner;
  // One task per (sample, group): its statistics, then its channels, while the block is
  // still in cache.
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(len, 1));
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, a.batch * a.groups, grain), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t block = r.begin(); block < r.end(); ++block) {
      const int64_t g = block % a.groups;
      const float* xb = x + block * len;
      float* yb = y + block * len;
      // Two passes (mean, then squared deviations): no cancellation for large means.
      const float mean = len ? float(block_sum(xb, len) / double(len)) : 0.f;
      const double var = len ? block_squared_deviation(xb, len, mean) / double(len) : 0.0;
      const float inv = float(1.0 / std::sqrt(var + double(a.epsilon)));
      const float gs = a.group_scale ? a.group_scale[g] : 1.f, gb = a.group_bias ? a.group_bias[g] : 0.f;
      for (int64_t k = 0; k < per_group; ++k) {
        const int64_t ch = g * per_group + k;
        const float cs = a.channel_scale ? a.channel_scale[ch] : 1.f, cb = a.channel_bias ? a.channel_bias[ch] : 0.f;
        // ((x - mean) · inv · gs + gb) · cs + cb as one multiply-add.
        const float scale = inv * gs * cs, shift = (gb - mean * inv * gs) * cs + cb;
        const float* xc = xb + k * a.inner;
        float* yc = yb + k * a.inner;
        if (a.silu) {
#pragma omp simd
          for (int64_t i = 0; i < a.inner; ++i) {
            const float v = xc[i] * scale + shift;
            yc[i] = v * fast_sigmoid(v);
          }
        } else {
#pragma omp simd
          for (int64_t i = 0; i < a.inner; ++i) yc[i] = xc[i] * scale + shift;
        }
      }
    }
  });
}

namespace {

std::vector<ValueInfo> infer_group_norm(const ShapeContext& c) {
  const Node& n = c.node;
  const ValueInfo& x = c.in(0);
  require_float(n, x.dtype, "input X");
  require_rank_at_least(n, x.shape, 2, "input X");
  const int64_t channels = x.shape[1], groups = n.attr_int("groups", 0);
  if (groups < 1 || channels % groups != 0)
    throw Error(n.describe() + ": groups " + std::to_string(groups) + " must divide the " + std::to_string(channels) + " channels");
  const std::string act = n.attr_string("activation", "");
  if (!act.empty() && act != "silu") throw Error(n.describe() + ": unknown activation '" + act + "'");
  const char* names[] = {"group scale", "group bias", "channel scale", "channel bias"};
  for (size_t i = 1; i <= 4; ++i) {
    if (!c.has_input(i)) continue;
    const int64_t want = i <= 2 ? groups : channels;
    require_float(n, c.in(i).dtype, names[i - 1]);
    if (shape_numel(c.in(i).shape) != want)
      throw Error(n.describe() + ": " + names[i - 1] + " " + shape_str(c.in(i).shape) + " must have " + std::to_string(want) +
                  " elements");
  }
  return {ValueInfo{DType::Float32, x.shape, true}};
}

void compute_group_norm(OpContext& c) {
  const Tensor& x = c.in(0);
  GroupNormArgs a;
  a.batch = x.shape()[0];
  a.channels = x.shape()[1];
  a.inner = (a.batch * a.channels) != 0 ? x.numel() / (a.batch * a.channels) : 0;
  a.groups = c.node.attr_int("groups", 1);
  a.epsilon = c.node.attr_float("epsilon", 1e-5f);
  const float** params[] = {&a.group_scale, &a.group_bias, &a.channel_scale, &a.channel_bias};
  for (size_t i = 1; i <= 4; ++i)
    if (c.has_input(i)) *params[i - 1] = c.in(i).data<float>();
  a.silu = c.node.attr_string("activation", "") == "silu";
  group_norm(x.data<float>(), c.out(0).data<float>(), a);
}

}  // namespace

void register_group_norm_op(OpRegistry& r) {
  // Each block is read before it is written: safe in place.
  r.add(OpDef{"fusebench", "GroupNorm", infer_group_norm, compute_group_norm, false, false, /*in_place=*/true});
}

}  // namespace fb
