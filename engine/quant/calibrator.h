// Post-training int8 calibration: the range of every activation tensor, observed over a
// calibration set, and the clipping threshold (amax) each int8 layer quantizes its input
// with. Three ways to choose the threshold, as TensorRT's calibrators do:
//   minmax      the largest |x| seen: nothing clips, small values get coarse steps;
//   percentile  the 99.99th percentile of |x|: rare outliers clip;
//   entropy     the threshold whose quantized histogram loses the least information
//               (smallest KL divergence from the observed one).
// A tensor that was never negative is quantized unsigned (u8, 255 steps over [0, amax]),
// others symmetric signed (s8, 127 steps each side), so a post-ReLU tensor keeps its bit.
//
// Two passes over the same calibration batches: the first finds each tensor's range, the
// second fills a histogram of |x| over it (percentile and entropy need it; minmax stops
// after the first).
#pragma once
#include <cstddef>
#include <map>
#include <string>
#include <vector>

namespace fb {

enum class CalibrationMethod { MinMax, Percentile, Entropy };
// Changes whenever a threshold computed from the same data could change: calibration
// caches record it, so an old cache is recomputed rather than trusted.
inline constexpr int kCalibrationAlgorithmVersion = 4;  // 4: convolutions' outputs too (activation tables)
CalibrationMethod parse_calibration_method(const std::string& s);  // Error listing the names
const char* calibration_method_name(CalibrationMethod m);
const std::vector<std::string>& calibration_method_names();

// What calibration found for one tensor.
struct TensorRange {
  float min = 0, max = 0;  // over every calibration batch
  float amax = 0;          // the chosen clipping threshold (> 0 when the tensor is usable)
  bool is_unsigned() const { return min >= 0.f; }
  bool operator==(const TensorRange&) const = default;
};

// The percentile calibrator's default, as TensorRT's.
inline constexpr double kDefaultCalibrationPercentile = 99.99;

class Calibrator {
 public:
  explicit Calibrator(CalibrationMethod method, double percentile = kDefaultCalibrationPercentile);
  bool wants_second_pass() const { return method_ != CalibrationMethod::MinMax; }
  // First pass: every batch's values of every tensor.
  void observe_range(const std::string& tensor, const float* x, size_t n);
  // Second pass (after every batch went through the first): the same batches again.
  void observe_histogram(const std::string& tensor, const float* x, size_t n);
  // Ranges with thresholds, for every tensor seen (non-finite values are ignored).
  std::map<std::string, TensorRange> ranges() const;

  static constexpr int kBins = 2048;

 private:
  struct Stats {
    float min = 0, max = 0;
    bool seen = false;
    std::vector<double> histogram;  // of |x| over [0, max(|min|, |max|)], kBins bins, exact zeros left out
    double zeros = 0;
  };
  CalibrationMethod method_;
  double percentile_;
  std::map<std::string, Stats> stats_;
};

// The thresholds, on a histogram of |x| whose bins are `bin_width` wide. `levels` is the
// number of quantized magnitudes (128 for s8, 256 for u8). entropy_threshold's histogram
// leaves exact zeros out; percentile_threshold's counts them.
float percentile_threshold(const std::vector<double>& histogram, double bin_width, double percentile);
float entropy_threshold(const std::vector<double>& histogram, double bin_width, int levels);

}  // namespace fb
