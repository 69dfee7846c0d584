#include "harness/cli/option_ranges.h"

#include <cmath>
#include <cstdlib>
#include <vector>

#include "engine/ir/error.h"
#include "harness/util/format_number.h"

namespace fb::cli {

namespace {

OptionRange at_least(const char* option, double low) { return {option, low, Bound::kClosed}; }
OptionRange above(const char* option, double low) { return {option, low, Bound::kOpen}; }
OptionRange between(const char* option, double low, Bound lb, double high, Bound hb) { return {option, low, lb, high, hb}; }
OptionRange fraction(const char* option, Bound low_bound) {
  return {option, 0, low_bound, 1, Bound::kOpen, /*fraction=*/true};
}

const std::vector<OptionRange>& ranges() {
  static const std::vector<OptionRange> rows{
      // Counts; threads and calibration batches as a scenario's fields accept them.
      between("threads", 1, Bound::kClosed, 1024, Bound::kClosed),
      at_least("batch", 1),
      between("calibration-batches", 1, Bound::kClosed, 10000, Bound::kClosed),
      at_least("iterations", 1),
      at_least("top", 1),
      at_least("depth", 0),  // 0: every level
      at_least("last", 1),
      at_least("repeats", 2),         // an A/A comparison needs two runs
      at_least("inject-repeats", 1),
      at_least("permutations", 19),   // fewer cannot reach p < 0.05
      at_least("min-segment", 2),
      at_least("cores-per-worker", 1),
      at_least("profile-iterations", 1),
      at_least("process", 0),
      at_least("seed", 0),
      // Database ids: SQLite's rowids start at 1.
      at_least("run", 1),
      at_least("baseline", 1),
      // Times and tolerances.
      above("case-timeout", 0),
      at_least("inject-delay-us", 0),
      above("min-speedup", 0),
      above("max-claimed-ms", 0),
      at_least("max-abs-err", 0),
      at_least("atol", 0),
      at_least("rtol", 0),
      between("min-cosine", -1, Bound::kClosed, 1, Bound::kClosed),
      // Levels and rates.
      between("alpha", 0, Bound::kOpen, 1, Bound::kOpen),
      between("max-false-alarms", 0, Bound::kClosed, 1, Bound::kClosed),
      between("min-detection", 0, Bound::kClosed, 1, Bound::kClosed),
      between("min-valid-rate", 0, Bound::kOpen, 1, Bound::kClosed),
      // Relative changes.
      fraction("min-effect", Bound::kClosed),
      fraction("max-regression", Bound::kClosed),
      fraction("inject-slowdown", Bound::kClosed),
      fraction("inject-delay", Bound::kOpen),  // selfcheck: a slowdown of 0 detects nothing
  };
  return rows;
}

std::string num(double v) { return format_number("%g", v); }

}  // namespace

const OptionRange* option_range(const std::string& option) {
  for (const OptionRange& r : ranges())
    if (option == r.option) return &r;
  return nullptr;
}

std::string range_text(const OptionRange& r) {
  if (r.high_bound == Bound::kNone) return (r.low_bound == Bound::kOpen ? "> " : ">= ") + num(r.low);
  return std::string("in ") + (r.low_bound == Bound::kOpen ? "(" : "[") + num(r.low) + ", " + num(r.high) +
         (r.high_bound == Bound::kOpen ? ")" : "]");
}

void check_option_range(const std::string& option, const std::string& value) {
  const OptionRange* r = option_range(option);
  if (!r) return;
  const double v = std::strtod(value.c_str(), nullptr);  // the parser has checked it is a number
  const bool low_ok = r->low_bound == Bound::kNone || (r->low_bound == Bound::kClosed ? v >= r->low : v > r->low);
  const bool high_ok = r->high_bound == Bound::kNone || (r->high_bound == Bound::kClosed ? v <= r->high : v < r->high);
  if (low_ok && high_ok && !std::isnan(v)) return;
  std::string msg = "--" + option + " " + value + ": must be " + range_text(*r);
  if (r->fraction && v >= 1)
    msg += "; a change is a fraction (" + num(v / 100) + " for " + num(v) + "%), not a percentage";
  throw Error(msg);
}

}  // namespace fb::cli
