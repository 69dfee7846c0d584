#include "harness/cases/accuracy.h"

#include <cmath>
#include <cstring>

namespace fb {

AccuracyConfig device_reference_agreement() {
  AccuracyConfig c;
  c.atol = 1e-3;
  c.rtol = 1e-3;
  c.min_cosine = 0.99999;
  return c;
}

AccuracyConfig default_accuracy(Precision precision, const std::string& device) {
  AccuracyConfig c;
  if (precision == Precision::FP32) return device == "cpu" ? c : device_reference_agreement();
  c.elementwise = false;
  c.min_cosine = precision == Precision::INT8 ? 0.99 : 0.999;
  return c;
}

AccuracyResult compare_outputs(const std::vector<Tensor>& engine, const std::vector<Tensor>& reference,
                               const std::vector<std::string>& names, const AccuracyConfig& tol) {
  AccuracyResult r;
  if (engine.size() != reference.size()) {
    r.passed = false;
    r.detail = "engine produced " + std::to_string(engine.size()) + " outputs, reference " + std::to_string(reference.size());
    return r;
  }
  double dot = 0, ne = 0, nr = 0;
  for (size_t o = 0; o < engine.size(); ++o) {
    const Tensor& e = engine[o];
    const Tensor& f = reference[o];
    const std::string name = o < names.size() ? names[o] : std::to_string(o);
    if (e.shape() != f.shape() || e.dtype() != f.dtype()) {
      r.passed = false;
      r.detail = "output '" + name + "': engine " + dtype_name(e.dtype()) + shape_str(e.shape()) + " vs reference " +
                 dtype_name(f.dtype()) + shape_str(f.shape());
      return r;
    }
    if (e.dtype() != DType::Float32) {
      if (std::memcmp(e.raw(), f.raw(), e.nbytes()) != 0 && r.passed) {
        r.passed = false;
        r.detail = "output '" + name + "': integer/boolean values differ";
      }
      continue;
    }
    const float* pe = e.data<float>();
    const float* pf = f.data<float>();
    for (int64_t i = 0; i < e.numel(); ++i) {
      const double a = pe[i], b = pf[i];
      if (!std::isfinite(a) || !std::isfinite(b)) {
        // Outside the errors and the cosine, which would skip it: an overflow to inf or a
        // NaN the reference does not have fails under either tolerance, never silently.
        const bool same = (std::isnan(a) && std::isnan(b)) || a == b;
        if (!same && r.passed) {
          r.passed = false;
          r.detail = "output '" + name + "' element " + std::to_string(i) + ": engine " + std::to_string(a) +
                     ", reference " + std::to_string(b) + " (a non-finite value on one side only)";
        }
        continue;
      }
      const double err = std::fabs(a - b);
      r.max_abs_err = std::max(r.max_abs_err, err);
      r.max_rel_err = std::max(r.max_rel_err, err / std::max(std::fabs(b), 1e-12));
      if (tol.elementwise && !(err <= tol.atol + tol.rtol * std::fabs(b)) && r.passed) {
        r.passed = false;
        r.detail = "output '" + name + "' element " + std::to_string(i) + ": engine " + std::to_string(a) + ", reference " +
                   std::to_string(b) + " (atol " + std::to_string(tol.atol) + ", rtol " + std::to_string(tol.rtol) + ")";
      }
      dot += a * b;
      ne += a * a;
      nr += b * b;
    }
  }
  r.cosine = (ne > 0 && nr > 0) ? dot / std::sqrt(ne * nr) : (ne == nr ? 1.0 : 0.0);
  if (tol.min_cosine && !(r.cosine >= *tol.min_cosine) && r.passed) {
    r.passed = false;
    r.detail = "cosine similarity " + std::to_string(r.cosine) + " is below the minimum " + std::to_string(*tol.min_cosine);
  }
  return r;
}

}  // namespace fb
