// Group normalization (engine/ops/group_norm.h) and the op that runs it fused,
// fusebench.GroupNorm(x, group_scale?, group_bias?, channel_scale?, channel_bias?) with
// attributes groups, epsilon and activation ("", "silu" or "gelu");
// engine/passes/group_norm_fusion.cpp makes it.
#include "engine/ops/group_norm.h"

#include <tbb/parallel_for.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "engine/ops/fast_math.h"
#include "engine/ops/nn_common.h"

namespace fb {

namespace {

// Sums in float lanes over blocks of kGroupNormSumBlock, and the block sums in double:
// vector speed, and a million-element group still sums to float accuracy.
constexpr int64_t kSumBlock = kGroupNormSumBlock;

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

// Σ (x - shift) and Σ (x - shift)², summed as block_sum sums.
struct Deviations {
  double sum = 0, squares = 0;
};

Deviations block_deviations(const float* x, int64_t len, float shift) {
  Deviations d;
  for (int64_t at = 0; at < len; at += kSumBlock) {
    const int64_t end = std::min(len, at + kSumBlock);
    float s = 0.f, s2 = 0.f;
#pragma omp simd reduction(+ : s, s2)
    for (int64_t i = at; i < end; ++i) {
      const float e = x[i] - shift;
      s += e;
      s2 += e * e;
    }
    d.sum += s;
    d.squares += s2;
  }
  return d;
}

// The statistics of `len` values from their deviations from `shift`, by the corrected
// two-pass algorithm (Chan, Golub and LeVeque, 1983): the mean is shift + c with
// c = Σ(x - shift) / len, the variance Σ(x - shift)² / len - c². `shift` is the first
// pass's mean rounded to float: neither that sum's rounding error (which grows with the
// mean, not the spread) nor the rounding of the mean to float reaches the output, since
// the kernels subtract `shift` from x (exact for values near it) and fold c into the shift
// of the scale and shift. What is left is the float sums' error relative to the spread.
struct GroupStats {
  float inv_std = 0;      // 1 / sqrt(variance + eps)
  double correction = 0;  // c: the mean less shift
};

GroupStats group_stats(const Deviations& d, int64_t len, float eps) {
  GroupStats g;
  g.correction = len ? d.sum / double(len) : 0.0;
  const double var = len ? std::max(0.0, d.squares / double(len) - g.correction * g.correction) : 0.0;
  g.inv_std = float(1.0 / std::sqrt(var + double(eps)));
  return g;
}

// y[i] = act((x[i] - mean) · scale + shift) for i < n, with one mean, scale and shift for
// the run (a channel's run in the plain layout) or one per element (a row of channels,
// channels-last). The mean is subtracted first: folded into the shift, x · scale would
// cancel against mean · scale and lose the output to rounding when the mean is large
// against the spread.
template <GroupNormActivation A, bool PerElement>
void scale_shift_row(const float* x, float* y, int64_t n, const float* mean, const float* scale, const float* shift) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = PerElement ? (x[i] - mean[i]) * scale[i] + shift[i] : (x[i] - mean[0]) * scale[0] + shift[0];
    if constexpr (A == GroupNormActivation::Silu) {
      y[i] = v * fast_sigmoid(v);
    } else if constexpr (A == GroupNormActivation::Gelu) {
      y[i] = 0.5f * v * (1.f + fast_erf(v * 0.70710678f));
    } else {
      y[i] = v;
    }
  }
}

template <bool PerElement>
void apply_row(GroupNormActivation a, const float* x, float* y, int64_t n, const float* mean, const float* scale,
               const float* shift) {
  switch (a) {
    case GroupNormActivation::Silu: return scale_shift_row<GroupNormActivation::Silu, PerElement>(x, y, n, mean, scale, shift);
    case GroupNormActivation::Gelu: return scale_shift_row<GroupNormActivation::Gelu, PerElement>(x, y, n, mean, scale, shift);
    case GroupNormActivation::None: return scale_shift_row<GroupNormActivation::None, PerElement>(x, y, n, mean, scale, shift);
  }
}

// Channel ch's multiply-add, given its group's statistics, for x less the shift:
// ((x - mean) · inv · gs + gb) · cs + cb = (x - shift) · scale + (gb · cs + cb - c · scale).
void channel_scale_shift(const GroupNormArgs& a, int64_t ch, const GroupStats& st, float* scale, float* shift) {
  const int64_t g = ch / (a.channels / a.groups);
  const float gs = a.group_scale ? a.group_scale[g] : 1.f, gb = a.group_bias ? a.group_bias[g] : 0.f;
  const float cs = a.channel_scale ? a.channel_scale[ch] : 1.f, cb = a.channel_bias ? a.channel_bias[ch] : 0.f;
  *scale = st.inv_std * gs * cs;
  *shift = float(double(gb * cs + cb) - st.correction * double(*scale));
}

}  // namespace

GroupNormActivation group_norm_activation(const Node& n) {
  const std::string a = n.attr_string("activation", "");
  if (a.empty()) return GroupNormActivation::None;
  if (a == "silu") return GroupNormActivation::Silu;
  if (a == "gelu") return GroupNormActivation::Gelu;
  throw Error(n.describe() + ": unknown activation '" + a + "'");
}

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
      // Two passes (mean, then deviations from it): no cancellation for large means.
      const float mean = len ? float(block_sum(xb, len) / double(len)) : 0.f;
      const GroupStats st = group_stats(block_deviations(xb, len, mean), len, a.epsilon);
      for (int64_t k = 0; k < per_group; ++k) {
        float scale = 0, shift = 0;
        channel_scale_shift(a, g * per_group + k, st, &scale, &shift);
        apply_row<false>(a.activation, xb + k * a.inner, yb + k * a.inner, a.inner, &mean, &scale, &shift);
      }
    }
  });
}

void group_norm_channels_last(const float* x, float* y, const GroupNormArgs& a) {
  const int64_t c = a.channels, per_group = a.groups ? c / a.groups : 0, len = per_group * a.inner;
  // Pixels per task: float sums over at most this many, then in double across tasks.
  const int64_t chunk = std::clamp<int64_t>(16384 / std::max<int64_t>(c, 1), 16, 1024);
  const int64_t chunks = (a.inner + chunk - 1) / chunk;
  std::vector<float> partial(size_t(a.batch * chunks * c)), partial_squares(partial.size());
  // Per (sample, chunk): per-channel sums over the chunk's pixels of x, or with `center`
  // (the sample's per-channel shifts) of x - center and of (x - center)², into `partial`
  // and `partial_squares`.
  auto channel_sums = [&](const float* center) {
    tbb::parallel_for(tbb::blocked_range<int64_t>(0, a.batch * chunks), [&](const tbb::blocked_range<int64_t>& r) {
      for (int64_t task = r.begin(); task < r.end(); ++task) {
        const int64_t n = task / chunks, p0 = task % chunks * chunk, p1 = std::min(a.inner, p0 + chunk);
        float* __restrict sum = partial.data() + task * c;
        float* __restrict sum2 = partial_squares.data() + task * c;
        std::fill(sum, sum + c, 0.f);
        std::fill(sum2, sum2 + c, 0.f);
        const float* __restrict m = center ? center + n * c : nullptr;
        for (int64_t p = p0; p < p1; ++p) {
          const float* __restrict row = x + (n * a.inner + p) * c;
          if (m) {
#pragma omp simd
            for (int64_t k = 0; k < c; ++k) {
              const float e = row[k] - m[k];
              sum[k] += e;
              sum2[k] += e * e;
            }
          } else {
#pragma omp simd
            for (int64_t k = 0; k < c; ++k) sum[k] += row[k];
          }
        }
      }
    });
  };
  // Per (sample, group): the sum of `sums` over its channels and the chunks, in double.
  auto group_totals = [&](const std::vector<float>& sums_of, std::vector<double>& total) {
    total.assign(size_t(a.batch * a.groups), 0.0);
    for (int64_t n = 0; n < a.batch; ++n)
      for (int64_t t = 0; t < chunks; ++t) {
        const float* sums = sums_of.data() + (n * chunks + t) * c;
        for (int64_t g = 0; g < a.groups; ++g) {
          float s = 0.f;
          for (int64_t k = g * per_group; k < (g + 1) * per_group; ++k) s += sums[k];
          total[size_t(n * a.groups + g)] += s;
        }
      }
  };
  std::vector<double> total, total_squares;
  channel_sums(nullptr);
  group_totals(partial, total);
  // Each channel's group mean rounded to float, the shift (group_stats), so that the second
  // pass reads it as a row.
  std::vector<float> mean(size_t(a.batch * c));
  for (int64_t n = 0; n < a.batch; ++n)
    for (int64_t g = 0; g < a.groups; ++g)
      std::fill_n(mean.begin() + n * c + g * per_group, per_group, len ? float(total[size_t(n * a.groups + g)] / double(len)) : 0.f);
  channel_sums(mean.data());
  group_totals(partial, total);
  group_totals(partial_squares, total_squares);
  std::vector<float> scale(size_t(a.batch * c)), shift(size_t(a.batch * c));
  for (int64_t n = 0; n < a.batch; ++n)
    for (int64_t g = 0; g < a.groups; ++g) {
      const size_t ng = size_t(n * a.groups + g);
      const GroupStats st = group_stats(Deviations{total[ng], total_squares[ng]}, len, a.epsilon);
      for (int64_t k = g * per_group; k < (g + 1) * per_group; ++k)
        channel_scale_shift(a, k, st, &scale[size_t(n * c + k)], &shift[size_t(n * c + k)]);
    }
  tbb::parallel_for(tbb::blocked_range<int64_t>(0, a.batch * chunks), [&](const tbb::blocked_range<int64_t>& r) {
    for (int64_t task = r.begin(); task < r.end(); ++task) {
      const int64_t n = task / chunks, p0 = task % chunks * chunk, p1 = std::min(a.inner, p0 + chunk);
      for (int64_t p = p0; p < p1; ++p)
        apply_row<true>(a.activation, x + (n * a.inner + p) * c, y + (n * a.inner + p) * c, c, mean.data() + n * c,
                        scale.data() + n * c, shift.data() + n * c);
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
  group_norm_activation(n);
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
  group_norm(c.in(0).data<float>(), c.out(0).data<float>(), group_norm_args(c.node, c.inputs));
}

}  // namespace

GroupNormArgs group_norm_args(const Node& node, const std::vector<const Tensor*>& inputs) {
  const Tensor& x = *inputs.at(0);
  GroupNormArgs a;
  a.batch = x.shape()[0];
  a.channels = x.shape()[1];
  a.inner = (a.batch * a.channels) != 0 ? x.numel() / (a.batch * a.channels) : 0;
  a.groups = node.attr_int("groups", 1);
  a.epsilon = node.attr_float("epsilon", 1e-5f);
  const float** params[] = {&a.group_scale, &a.group_bias, &a.channel_scale, &a.channel_bias};
  for (size_t i = 1; i <= 4; ++i)
    if (i < inputs.size() && inputs[i]) *params[i - 1] = inputs[i]->data<float>();
  a.activation = group_norm_activation(node);
  return a;
}

void register_group_norm_op(OpRegistry& r) {
  // Each block is read before it is written: safe in place.
  r.add(OpDef{"fusebench", "GroupNorm", infer_group_norm, compute_group_norm, false, false, /*in_place=*/true});
}

}  // namespace fb
