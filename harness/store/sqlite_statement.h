// Thin, exception-safe SQLite helpers for the result store: errors that name the file and
// what was being done, prepared statements that bind parameters by name (":median_ms")
// and read columns by name, and transactions that roll back on the way out of a failure.
#pragma once
#include <cstdint>
#include <map>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>

struct sqlite3;
struct sqlite3_stmt;

namespace fb::store {

// One message per kind of failure, always naming the file. `doing` completes "cannot ...".
[[noreturn]] void throw_db_error(sqlite3* db, const std::string& path, int rc, const std::string& doing);

void exec(sqlite3* db, const std::string& path, const char* sql, const std::string& doing);

// Rolls back the open transaction, if any; used on the way out of a failure, so it never
// throws and the original error is the one reported.
void rollback_quietly(sqlite3* db) noexcept;

// A prepared statement. Values never go into SQL text: they are bound by parameter name,
// and results are read by column name, so neither depends on the order of a column list.
class Statement {
 public:
  Statement(sqlite3* db, const std::string& path, const std::string& sql);
  ~Statement();
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  // `param` as written in the SQL (":median_ms"). A NaN double binds NULL, a bool 0 or 1.
  void bind(const char* param, double v);
  void bind(const char* param, std::optional<double> v) { bind(param, v.value_or(std::numeric_limits<double>::quiet_NaN())); }  // unset: NULL
  void bind(const char* param, bool v);
  void bind(const char* param, std::string_view v);
  void bind(const char* param, const std::string& v) { bind(param, std::string_view(v)); }
  void bind(const char* param, const char* v) { bind(param, std::string_view(v)); }
  template <class Int>
    requires(std::is_integral_v<Int> && !std::is_same_v<Int, bool>)
  void bind(const char* param, Int v) {
    bind_int64(param, static_cast<int64_t>(v));
  }

  // true: a row is ready; false: done. Errors throw, naming what was being done.
  bool step(const std::string& doing);
  // For statements that return no rows; resets so the statement can be bound again.
  void run(const std::string& doing);
  void reset();

  // Columns of the current row, by the name the SELECT gives them.
  bool is_null(const char* column) const;
  int64_t integer(const char* column) const;
  double real(const char* column) const;  // NULL reads as NaN
  std::string text(const char* column) const;  // NULL reads as ""
  // Reads a column into a value of the type it is stored in (the column tables' reader).
  template <class T>
  T get(const char* column) const {
    if constexpr (std::is_same_v<T, bool>) return integer(column) != 0;
    else if constexpr (std::is_integral_v<T>) return static_cast<T>(integer(column));
    else if constexpr (std::is_floating_point_v<T>) return real(column);
    else if constexpr (std::is_same_v<T, std::optional<double>>) return is_null(column) ? std::nullopt : T(real(column));
    else return text(column);
  }

  const std::string& path() const { return path_; }

 private:
  void bind_int64(const char* param, int64_t v);
  int param_index(const char* param) const;
  int column_index(const char* column) const;
  void check(int rc);

  sqlite3* db_;
  std::string path_;
  std::string sql_;
  sqlite3_stmt* stmt_ = nullptr;
  std::map<std::string, int, std::less<>> columns_;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back when destroyed uncommitted (an exception on the way).
class Transaction {
 public:
  Transaction(sqlite3* db, const std::string& path, const std::string& doing);
  ~Transaction() { rollback_quietly(db_); }
  void commit();
  Transaction(const Transaction&) = delete;
  Transaction& operator=(const Transaction&) = delete;

 private:
  sqlite3* db_;
  const std::string& path_;
  std::string doing_;
};

// A read transaction, so that a multi-query load sees one consistent snapshot even while
// another process commits cases.
class ReadSnapshot {
 public:
  ReadSnapshot(sqlite3* db, const std::string& path) : db_(db) { exec(db, path, "BEGIN", "start reading"); }
  ~ReadSnapshot() { rollback_quietly(db_); }  // nothing was written: ending it is enough
  ReadSnapshot(const ReadSnapshot&) = delete;
  ReadSnapshot& operator=(const ReadSnapshot&) = delete;

 private:
  sqlite3* db_;
};

}  // namespace fb::store
