#include "harness/store/sqlite_statement.h"

#include <sqlite3.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <limits>

#include "engine/ir/error.h"

namespace fb::store {

void throw_db_error(sqlite3* db, const std::string& path, int rc, const std::string& doing) {
  std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  // A full disk reaches SQLite as SQLITE_FULL only where it writes the database or journal;
  // growing the WAL index (-shm) or another write says "disk I/O error". errno tells.
  const int os_errno = db ? sqlite3_system_errno(db) : 0;
  if ((rc & 0xff) == SQLITE_IOERR && (os_errno == ENOSPC || os_errno == EDQUOT || os_errno == EFBIG))
    throw Error(path + ": the disk is full (" + std::strerror(os_errno) + "); cannot " + doing);
  switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      throw Error(path + " is locked by another process (still busy after waiting); cannot " + doing + ": " + msg);
    case SQLITE_NOTADB:
      throw Error(path + " is not a SQLite database (" + msg + "); is it the right file? fusebench left it untouched");
    case SQLITE_CORRUPT:
      throw Error(path + " is corrupt (" + msg + "); cannot " + doing);
    case SQLITE_FULL:
      throw Error(path + ": the disk is full; cannot " + doing);
    case SQLITE_READONLY:
    case SQLITE_PERM:
      throw Error(path + " is read-only (" + msg + "); cannot " + doing);
    case SQLITE_CANTOPEN:
      throw Error("cannot open " + path + " (" + msg + ")");
    default:
      throw Error(path + ": cannot " + doing + ": " + msg);
  }
}

void exec(sqlite3* db, const std::string& path, const char* sql, const std::string& doing) {
  char* err = nullptr;
  int rc = sqlite3_exec(db, sql, nullptr, nullptr, &err);
  sqlite3_free(err);  // sqlite3_errmsg(db) still holds the message
  if (rc != SQLITE_OK) throw_db_error(db, path, rc, doing);
}

void rollback_quietly(sqlite3* db) noexcept {
  if (db && !sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
}

Statement::Statement(sqlite3* db, const std::string& path, const std::string& sql) : db_(db), path_(path), sql_(sql) {
  int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &stmt_, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt_);
    stmt_ = nullptr;
    throw_db_error(db, path, sqlite3_extended_errcode(db), "prepare a query");
  }
  for (int i = 0, n = sqlite3_column_count(stmt_); i < n; ++i) columns_.emplace(sqlite3_column_name(stmt_, i), i);
}

Statement::~Statement() { sqlite3_finalize(stmt_); }

int Statement::param_index(const char* param) const {
  int i = sqlite3_bind_parameter_index(stmt_, param);
  FB_CHECK(i > 0, std::string("no parameter ") + param + " in: " + sql_);
  return i;
}

int Statement::column_index(const char* column) const {
  auto it = columns_.find(std::string_view(column));
  FB_CHECK(it != columns_.end(), std::string("no column ") + column + " in: " + sql_);
  return it->second;
}

void Statement::check(int rc) {
  if (rc != SQLITE_OK) throw_db_error(db_, path_, rc, "bind a query parameter");
}

void Statement::bind_int64(const char* param, int64_t v) { check(sqlite3_bind_int64(stmt_, param_index(param), v)); }
void Statement::bind(const char* param, bool v) { bind_int64(param, v ? 1 : 0); }
void Statement::bind(const char* param, double v) {
  // SQLite would turn NaN into NULL anyway; say so explicitly.
  const int i = param_index(param);
  check(std::isnan(v) ? sqlite3_bind_null(stmt_, i) : sqlite3_bind_double(stmt_, i, v));
}
void Statement::bind(const char* param, std::string_view v) {
  check(sqlite3_bind_text64(stmt_, param_index(param), v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
}

bool Statement::step(const std::string& doing) {
  int rc = sqlite3_step(stmt_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  throw_db_error(db_, path_, rc, doing);
}

void Statement::run(const std::string& doing) {
  while (step(doing)) {
  }
  reset();
}

void Statement::reset() {
  sqlite3_reset(stmt_);
  sqlite3_clear_bindings(stmt_);
}

bool Statement::is_null(const char* column) const {
  return sqlite3_column_type(stmt_, column_index(column)) == SQLITE_NULL;
}
int64_t Statement::integer(const char* column) const { return sqlite3_column_int64(stmt_, column_index(column)); }
double Statement::real(const char* column) const {
  const int i = column_index(column);
  return sqlite3_column_type(stmt_, i) == SQLITE_NULL ? std::numeric_limits<double>::quiet_NaN()
                                                      : sqlite3_column_double(stmt_, i);
}
std::string Statement::text(const char* column) const {
  const int i = column_index(column);
  const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(stmt_, i));
  int n = sqlite3_column_bytes(stmt_, i);
  return p ? std::string(p, static_cast<size_t>(n)) : std::string();
}

Transaction::Transaction(sqlite3* db, const std::string& path, const std::string& doing)
    : db_(db), path_(path), doing_(doing) {
  exec(db, path, "BEGIN IMMEDIATE", doing);
}

void Transaction::commit() { exec(db_, path_, "COMMIT", doing_); }

}  // namespace fb::store
