// Runs SQL on a database file through the SQLite library, for tests that change a stored
// run by hand (the suite needs no sqlite3 command).
#pragma once
#include <sqlite3.h>

#include <string>

namespace fb::test {

// What f(db) returns, on the database opened with `flags` (a busy timeout of 2 s); SQLite's
// message when it cannot be opened.
template <typename F>
std::string with_db(const std::string& db_path, int flags, F f) {
  sqlite3* db = nullptr;
  std::string result;
  if (sqlite3_open_v2(db_path.c_str(), &db, flags, nullptr) != SQLITE_OK) {
    result = db ? sqlite3_errmsg(db) : "cannot open " + db_path;
  } else {
    sqlite3_busy_timeout(db, 2000);
    result = f(db);
  }
  sqlite3_close(db);
  return result;
}

// "" when every statement ran, else SQLite's message.
inline std::string exec_sql(const std::string& db_path, const std::string& sql) {
  return with_db(db_path, SQLITE_OPEN_READWRITE, [&](sqlite3* db) -> std::string {
    char* message = nullptr;
    std::string error;
    if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) error = message ? message : "error";
    sqlite3_free(message);
    return error;
  });
}

// The first column of the first row `sql` returns ("" for none, or SQLite's message).
inline std::string query_one(const std::string& db_path, const std::string& sql) {
  return with_db(db_path, SQLITE_OPEN_READONLY, [&](sqlite3* db) -> std::string {
    std::string value;
    auto first = [](void* out, int n, char** cols, char**) {
      if (n > 0 && cols[0] && static_cast<std::string*>(out)->empty()) *static_cast<std::string*>(out) = cols[0];
      return 0;
    };
    char* message = nullptr;
    if (sqlite3_exec(db, sql.c_str(), first, &value, &message) != SQLITE_OK) value = message ? message : "error";
    sqlite3_free(message);
    return value;
  });
}

}  // namespace fb::test
