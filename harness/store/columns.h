// Which member of a run, case, measurement or layer each stored column holds: one table
// per SQL table, read by both the writer (INSERT ... VALUES (:column, ...)) and the reader
// (SELECT column, ...), so a new field is one line here plus its migration in schema.cpp.
#pragma once
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/ir/error.h"
#include "harness/cases/case.h"
#include "harness/measure/environment.h"
#include "harness/store/sqlite_statement.h"

namespace fb::store {

template <class Record>
struct Column {
  const char* name;      // the SQL column; its parameter is ":" + name
  const char* param;
  void (*bind)(Statement&, const char* param, const Record&);
  void (*read)(const Statement&, const char* name, Record&);  // nullptr: written, never read back
};

// A column holding one scalar member; `Access` is a captureless lambda returning a
// reference to it: [](auto& r) -> auto& { return r.speedup; }.
template <class Record, class Access>
constexpr Column<Record> scalar(const char* name, const char* param, Access) {
  return {name, param, [](Statement& s, const char* p, const Record& r) { s.bind(p, Access{}(r)); },
          [](const Statement& s, const char* n, Record& r) {
            Access access;  // named: g++ 13 takes a field reference from a temporary for dangling
            auto& field = access(r);
            field = s.get<std::remove_cvref_t<decltype(field)>>(n);
          }};
}

// A column holding an enum member by its name (the words the SQL CHECK lists):
// named<R, case_status_name, parse_case_status>(...), the parser given where it read.
template <class Record, auto kName, auto kParse, class Access>
constexpr Column<Record> named(const char* name, const char* param, Access) {
  return {name, param, [](Statement& s, const char* p, const Record& r) { s.bind(p, std::string(kName(Access{}(r)))); },
          [](const Statement& s, const char* n, Record& r) { Access{}(r) = kParse(s.text(n), s.path() + ": column " + n); }};
}

// A column holding a member as JSON text (lists of names or shapes, version maps).
template <class Record, class Access>
constexpr Column<Record> as_json(const char* name, const char* param, Access) {
  return {name, param,
          [](Statement& s, const char* p, const Record& r) {
            s.bind(p, nlohmann::json(Access{}(r)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
          },
          [](const Statement& s, const char* n, Record& r) {
            Access access;  // named: g++ 13 takes a field reference from a temporary for dangling
            auto& field = access(r);
            try {
              nlohmann::json::parse(s.text(n)).get_to(field);
            } catch (const nlohmann::json::exception& e) {
              throw Error(s.path() + ": column " + n + " does not hold the JSON it should: " + e.what());
            }
          }};
}

// A column holding an optional member as JSON text, '' when it is unset (and in rows
// stored before the column existed). The member's type has to_json/from_json.
template <class Record, class Access>
constexpr Column<Record> optional_as_json(const char* name, const char* param, Access) {
  return {name, param,
          [](Statement& s, const char* p, const Record& r) {
            Access access;  // named: g++ 13 takes a field reference from a temporary for dangling
            const auto& field = access(r);
            s.bind(p, field ? nlohmann::json(*field).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)
                            : std::string());
          },
          [](const Statement& s, const char* n, Record& r) {
            Access access;  // named: g++ 13 takes a field reference from a temporary for dangling
            auto& field = access(r);
            const std::string text = s.text(n);
            field.reset();
            if (text.empty()) return;
            try {
              field = nlohmann::json::parse(text).get<typename std::remove_cvref_t<decltype(field)>::value_type>();
            } catch (const nlohmann::json::exception& e) {
              throw Error(s.path() + ": column " + n + " does not hold the JSON it should: " + e.what());
            } catch (const Error& e) {
              throw Error(s.path() + ": column " + n + ": " + e.what());
            }
          }};
}

// A column computed from the record when writing (case_key, layer_count); never read back.
template <class Record, class Compute>
constexpr Column<Record> computed(const char* name, const char* param, Compute) {
  return {name, param, [](Statement& s, const char* p, const Record& r) { s.bind(p, Compute{}(r)); }, nullptr};
}

const std::vector<Column<RunInfo>>& run_columns();
const std::vector<Column<CaseResult>>& case_columns();  // config_json is read first, by the reader itself
const std::vector<Column<Measurement>>& measurement_columns();
const std::vector<Column<LayerRecord>>& layer_columns();
const std::vector<Column<LayerProfile>>& profile_layer_columns();  // case_id bound by the caller
const std::vector<Column<NodeProfile>>& profile_node_columns();    // case_id bound by the caller
const std::vector<Column<FusionDecision>>& fusion_decision_columns();  // case_id and seq bound by the caller
const std::vector<Column<PluginCost>>& plugin_cost_columns();
const std::vector<Column<LoadFigures>>& load_step_columns();  // case_id and step bound by the caller
const std::vector<Column<LoadSample>>& load_sample_columns();  // case_id, step and sample bound by the caller
const std::vector<Column<PreventedFusion>>& plugin_cost_group_columns();  // case_id and rank bound by the caller

// "INSERT INTO table (a, b) VALUES (:a, :b)" over the columns and `extra` (bound by the caller).
template <class Record>
std::string insert_sql(const char* table, const std::vector<Column<Record>>& columns,
                       const std::vector<std::string>& extra = {}) {
  std::string names, params;
  auto add = [&](const std::string& n, const std::string& p) {
    names += (names.empty() ? "" : ", ") + n;
    params += (params.empty() ? "" : ", ") + p;
  };
  for (const std::string& e : extra) add(e, ":" + e);
  for (const Column<Record>& c : columns) add(c.name, c.param);
  return std::string("INSERT INTO ") + table + " (" + names + ") VALUES (" + params + ")";
}

// "SELECT a, b" over the columns that are read back, with `prefix` ("c.") before each.
template <class Record>
std::string select_list(const std::vector<Column<Record>>& columns, const std::string& prefix = "") {
  std::string out;
  for (const Column<Record>& c : columns)
    if (c.read) out += (out.empty() ? "" : ", ") + prefix + c.name + " AS " + c.name;
  return out;
}

template <class Record>
void bind_all(Statement& s, const std::vector<Column<Record>>& columns, const Record& r) {
  for (const Column<Record>& c : columns) c.bind(s, c.param, r);
}

template <class Record>
void read_all(const Statement& s, const std::vector<Column<Record>>& columns, Record& r) {
  for (const Column<Record>& c : columns)
    if (c.read) c.read(s, c.name, r);
}

}  // namespace fb::store
