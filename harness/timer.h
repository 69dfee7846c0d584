// Times two executors side by side on the same inputs: the cold first iteration of each
// kept apart, then warm-up by time and by count, then timed iterations interleaved
// (engine, reference, engine, ...) so that drift in the machine's state hits both alike.
// Stops when both medians' 95% confidence half-widths fall below the target, or at the
// time cap or iteration cap (then the stop reason says so and the case is noisy).
#pragma once
#include <functional>
#include <string>

#include "harness/case.h"

namespace fb {

struct SideBySide {
  Measurement engine, reference;
  std::string stop_reason;  // "converged", "time-cap" or "iteration-cap"
};

using ProgressFn = std::function<void(const std::string&)>;

SideBySide time_side_by_side(const std::function<void()>& engine, const std::function<void()>& reference,
                             const TimingConfig& timing, int64_t batch, const ProgressFn& progress = nullptr);

}  // namespace fb
