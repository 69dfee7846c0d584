// The accepted range of every numeric flag of every command, in one table keyed by the
// flag's name (a name means the same thing in every command that has it: --threads is
// always a thread count). The shared parser (parse_or_help) checks each given value
// against its row before a command runs, and names the flag; `fusebench completion list`
// shows each row, and a test fails for a numeric flag that has none.
#pragma once
#include <string>

namespace fb::cli {

enum class Bound { kNone, kClosed, kOpen };  // no bound; the bound itself allowed; not allowed

struct OptionRange {
  const char* option;  // long name, without "--"
  double low = 0;
  Bound low_bound = Bound::kNone;
  double high = 0;
  Bound high_bound = Bound::kNone;
  // A relative change given as a fraction (0.05 = 5%): a value of 1 or more is refused as a
  // percentage typed as a fraction (`--max-regression 5` meant 5%).
  bool fraction = false;
};

// The row for a flag, or nullptr when it has none.
const OptionRange* option_range(const std::string& option);

// ">= 1", "> 0", "in (0, 1)": the range as `completion list` and error messages write it.
std::string range_text(const OptionRange& r);

// Throws fb::Error "--NAME VALUE: must be ..." when `value` (as given) lies outside the
// row's range; nothing when the flag has no row.
void check_option_range(const std::string& option, const std::string& value);

}  // namespace fb::cli
