#include "engine/quant/calibrator.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "engine/ir/error.h"

namespace fb {

const std::vector<std::string>& calibration_method_names() {
  static const std::vector<std::string> names{"minmax", "percentile", "entropy"};
  return names;
}

CalibrationMethod parse_calibration_method(const std::string& s) {
  if (s == "minmax") return CalibrationMethod::MinMax;
  if (s == "percentile") return CalibrationMethod::Percentile;
  if (s == "entropy") return CalibrationMethod::Entropy;
  throw Error("unknown calibrator '" + s + "' (known: minmax, percentile, entropy)");
}

const char* calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::MinMax: return "minmax";
    case CalibrationMethod::Percentile: return "percentile";
    case CalibrationMethod::Entropy: return "entropy";
  }
  return "?";
}

Calibrator::Calibrator(CalibrationMethod method, double percentile) : method_(method), percentile_(percentile) {
  if (!(percentile > 0 && percentile <= 100)) throw Error("calibration percentile must be in (0, 100]");
}

void Calibrator::observe_range(const std::string& tensor, const float* x, size_t n) {
  Stats& s = stats_[tensor];
  float lo = std::numeric_limits<float>::infinity(), hi = -lo;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (lo > hi) return;  // nothing finite
  s.min = s.seen ? std::min(s.min, lo) : lo;
  s.max = s.seen ? std::max(s.max, hi) : hi;
  s.seen = true;
}

void Calibrator::observe_histogram(const std::string& tensor, const float* x, size_t n) {
  auto it = stats_.find(tensor);
  if (it == stats_.end() || !it->second.seen) return;
  Stats& s = it->second;
  const double amax = std::max(std::fabs(s.min), std::fabs(s.max));
  if (s.histogram.empty()) s.histogram.assign(kBins, 0.0);
  const double per_bin = amax > 0 ? kBins / amax : 0;
  for (size_t i = 0; i < n; ++i) {
    if (!std::isfinite(x[i])) continue;
    if (x[i] == 0.f) {  // exact in any quantization: kept apart (see entropy_threshold)
      s.zeros += 1;
      continue;
    }
    const int b = std::min(kBins - 1, static_cast<int>(std::fabs(x[i]) * per_bin));
    s.histogram[b] += 1;
  }
}

std::map<std::string, TensorRange> Calibrator::ranges() const {
  std::map<std::string, TensorRange> out;
  for (const auto& [name, s] : stats_) {
    if (!s.seen) continue;
    TensorRange r{s.min, s.max, 0.f};
    const float full = r.is_unsigned() ? s.max : std::max(std::fabs(s.min), std::fabs(s.max));
    r.amax = full;
    if (method_ != CalibrationMethod::MinMax && !s.histogram.empty() && full > 0) {
      const double bin_width = double(full) / kBins;
      std::vector<double> with_zeros = s.histogram;
      with_zeros[0] += s.zeros;
      const float t = method_ == CalibrationMethod::Percentile
                          ? percentile_threshold(with_zeros, bin_width, percentile_)
                          : entropy_threshold(s.histogram, bin_width, r.is_unsigned() ? 256 : 128);
      if (t > 0) r.amax = std::min(full, t);
    }
    out[name] = r;
  }
  return out;
}

float percentile_threshold(const std::vector<double>& histogram, double bin_width, double percentile) {
  double total = 0;
  for (double c : histogram) total += c;
  if (total <= 0) return 0.f;
  const double target = total * percentile / 100.0;
  double below = 0;
  for (size_t b = 0; b < histogram.size(); ++b) {
    if (below + histogram[b] >= target) {
      // Linear within the bin.
      const double frac = histogram[b] > 0 ? (target - below) / histogram[b] : 1.0;
      return static_cast<float>((double(b) + frac) * bin_width);
    }
    below += histogram[b];
  }
  return static_cast<float>(double(histogram.size()) * bin_width);
}

// The histogram given leaves out exact zeros: zero is exact in any quantization, and a
// ReLU output's spike of zeros, merged with its neighbours into one quantized level,
// would make every coarse merge look costly and drive the threshold down (to a quarter of
// the range on resnet18, where outputs then lost a tenth of their cosine similarity).
// For each candidate threshold (an upper bin edge i): P is the histogram up to it with
// every clipped value added to its last bin (what quantizing at that threshold keeps); Q
// is the same bins merged into `levels` quantized magnitudes and spread back evenly over
// the bins that held values. The threshold with the smallest KL(P || Q) wins.
float entropy_threshold(const std::vector<double>& histogram, double bin_width, int levels) {
  const int bins = static_cast<int>(histogram.size());
  double total = 0;
  for (double c : histogram) total += c;
  if (total <= 0 || levels <= 0) return 0.f;
  if (bins <= levels) return static_cast<float>(bins * bin_width);
  // Mass beyond each bin edge, for the clipped tail.
  std::vector<double> tail(bins + 1, 0.0);
  for (int b = bins - 1; b >= 0; --b) tail[b] = tail[b + 1] + histogram[b];
  double best_kl = std::numeric_limits<double>::infinity();
  int best_i = bins;
  std::vector<double> p, q;
  for (int i = levels; i <= bins; ++i) {
    p.assign(histogram.begin(), histogram.begin() + i);
    p[i - 1] += tail[i];
    q.assign(i, 0.0);
    for (int level = 0; level < levels; ++level) {
      const int start = static_cast<int>(int64_t(level) * i / levels);
      const int stop = static_cast<int>(int64_t(level + 1) * i / levels);
      double mass = 0;
      int nonzero = 0;
      for (int b = start; b < stop; ++b) {
        mass += histogram[b];
        nonzero += histogram[b] > 0;
      }
      if (nonzero == 0) continue;
      for (int b = start; b < stop; ++b)
        if (histogram[b] > 0) q[b] = mass / nonzero;
    }
    double p_sum = 0, q_sum = 0;
    for (int b = 0; b < i; ++b) p_sum += p[b], q_sum += q[b];
    if (p_sum <= 0 || q_sum <= 0) continue;
    // A bin P has and Q lacks (the clipped tail's) costs as if Q held a tiny share there.
    const double eps = 1e-4 / double(i);
    double kl = 0;
    for (int b = 0; b < i; ++b) {
      if (p[b] <= 0) continue;
      const double pb = p[b] / p_sum, qb = q[b] > 0 ? q[b] / q_sum : eps;
      kl += pb * std::log(pb / qb);
    }
    if (kl < best_kl) best_kl = kl, best_i = i;
  }
  return static_cast<float>(best_i * bin_width);
}

}  // namespace fb
