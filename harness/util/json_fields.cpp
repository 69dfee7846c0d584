#include "harness/util/json_fields.h"

#include <cmath>

namespace fb::json_fields {

void bad_field(const std::string& field, const char* want, const json& v) {
  std::string shown = v.dump(-1, ' ', false, json::error_handler_t::replace);
  if (shown.size() > 60) shown = shown.substr(0, 57) + "...";
  throw Error("field '" + field + "' must be " + want + ", got " + shown);
}

void read(const json& j, const char* key, const std::string& prefix, std::string& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (!it->is_string()) bad_field(prefix + key, "a string", *it);
  out = it->get<std::string>();
}

void read(const json& j, const char* key, const std::string& prefix, bool& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (!it->is_boolean()) bad_field(prefix + key, "true or false", *it);
  out = it->get<bool>();
}

namespace {
bool number_from(const json& v, double& out) {
  if (v.is_number()) out = v.get<double>();
  else if (v.is_null()) out = std::numeric_limits<double>::quiet_NaN();
  else if (v == "inf") out = std::numeric_limits<double>::infinity();
  else if (v == "-inf") out = -std::numeric_limits<double>::infinity();
  else return false;
  return true;
}
}  // namespace

void read(const json& j, const char* key, const std::string& prefix, double& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (!number_from(*it, out)) bad_field(prefix + key, "a number", *it);
}

json number_or_null(double v) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

const json& object_at(const json& j, const char* key, std::string_view field) {
  static const json empty = json::object();
  auto it = j.find(key);
  if (it == j.end()) return empty;
  if (!it->is_object()) bad_field(std::string(field), "an object", *it);
  return *it;
}

void read_numbers(const json& j, const char* key, const std::string& prefix, std::vector<double>& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (!it->is_array()) bad_field(prefix + key, "a list of numbers", *it);
  out.clear();
  out.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    double v = 0;
    if (!number_from((*it)[i], v)) bad_field(prefix + key + "[" + std::to_string(i) + "]", "a number", (*it)[i]);
    out.push_back(v);
  }
}

void read_ints(const json& j, const char* key, const std::string& prefix, std::vector<int>& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (!it->is_array()) bad_field(prefix + key, "a list of integers", *it);
  out.clear();
  out.reserve(it->size());
  for (size_t i = 0; i < it->size(); ++i) {
    const json& v = (*it)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < std::numeric_limits<int>::min() ||
        v.get<int64_t>() > std::numeric_limits<int>::max())
      bad_field(prefix + key + "[" + std::to_string(i) + "]", "an integer", v);
    out.push_back(static_cast<int>(v.get<int64_t>()));
  }
}

void read_strings(const json& j, const char* key, const std::string& prefix, std::vector<std::string>& out) {
  auto it = j.find(key);
  if (it == j.end()) return;
  if (!it->is_array()) bad_field(prefix + key, "a list of strings", *it);
  out.clear();
  for (const json& e : *it) {
    if (!e.is_string()) bad_field(prefix + key, "a list of strings", *it);
    out.push_back(e.get<std::string>());
  }
}

}  // namespace fb::json_fields
