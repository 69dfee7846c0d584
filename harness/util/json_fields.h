// Typed readers for JSON documents that fusebench writes itself (case results shipped
// between processes; a case's settings are read by the case table, harness/cases/case_fields.h):
// a missing key keeps the caller's default, a key of the wrong type is an fb::Error naming
// its path ("engine.samples_ms[2]"), so a damaged or foreign document is refused with a
// message rather than read as zeros.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"

namespace fb::json_fields {

using json = nlohmann::json;

// "field 'timing.min_iterations' must be an integer, got "x"".
[[noreturn]] void bad_field(const std::string& field, const char* want, const json& v);

void read(const json& j, const char* key, const std::string& prefix, std::string& out);
void read(const json& j, const char* key, const std::string& prefix, bool& out);
// A number; null reads as NaN and the strings "inf" / "-inf" as infinities (what
// number_or_null writes for values JSON has no number for).
void read(const json& j, const char* key, const std::string& prefix, double& out);

// A finite double as a number; NaN as null, infinities as "inf" / "-inf".
json number_or_null(double v);

template <typename Int>
void read_int(const json& j, const char* key, const std::string& prefix, Int& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  const char* want = std::numeric_limits<Int>::is_signed ? "an integer" : "a non-negative integer";
  if (!it->is_number_integer()) bad_field(prefix + key, want, *it);
  if (it->is_number_unsigned()) {
    auto v = it->template get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<Int>::max())) bad_field(prefix + key, want, *it);
    out = static_cast<Int>(v);
  } else {
    auto v = it->template get<int64_t>();
    if (v < static_cast<int64_t>(std::numeric_limits<Int>::min()) ||
        (v > 0 && static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<Int>::max())))
      bad_field(prefix + key, want, *it);
    out = static_cast<Int>(v);
  }
}

// The object at `key` (an empty one when absent); field names it in errors.
const json& object_at(const json& j, const char* key, std::string_view field);

// A list of numbers (null elements read as NaN) or of integers, at `key`; absent leaves `out`.
void read_numbers(const json& j, const char* key, const std::string& prefix, std::vector<double>& out);
void read_ints(const json& j, const char* key, const std::string& prefix, std::vector<int>& out);
void read_strings(const json& j, const char* key, const std::string& prefix, std::vector<std::string>& out);

}  // namespace fb::json_fields
