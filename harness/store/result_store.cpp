// Opening and closing the store; the schema, writes and reads are in harness/store/.
#include "harness/store/result_store.h"

#include <sqlite3.h>

#include <utility>

#include "engine/ir/error.h"
#include "harness/store/schema.h"

namespace fb {

ResultStore::ResultStore(const std::string& path, Mode mode) : path_(path) {
  if (mode == Mode::kExisting) sqlite3_close(store::open_read_only(path_, busy_timeout_ms_));  // refuses a non-store
  if (mode != Mode::kReadOnly) {
    db_ = store::open_and_migrate(path_, busy_timeout_ms_);
    return;
  }
  db_ = store::open_read_only(path_, busy_timeout_ms_);
  const int version = store::read_schema_version(db_, path_);
  if (version != kSchemaVersion) {
    close();
    throw Error(path_ + " has schema version " + std::to_string(version) + "; this fusebench reads it only at version " +
                std::to_string(kSchemaVersion) + " without changing it (use the fusebench that wrote it)");
  }
}

ResultStore::~ResultStore() { close(); }

ResultStore::ResultStore(ResultStore&& other) noexcept
    : path_(std::move(other.path_)), db_(std::exchange(other.db_, nullptr)), busy_timeout_ms_(other.busy_timeout_ms_) {}

ResultStore& ResultStore::operator=(ResultStore&& other) noexcept {
  if (this != &other) {
    close();
    path_ = std::move(other.path_);
    db_ = std::exchange(other.db_, nullptr);
    busy_timeout_ms_ = other.busy_timeout_ms_;
  }
  return *this;
}

void ResultStore::close() noexcept {
  if (db_) sqlite3_close_v2(db_);
  db_ = nullptr;
}

sqlite3* ResultStore::db() const {
  FB_CHECK(db_ != nullptr, "use of a moved-from ResultStore");
  return db_;
}

int ResultStore::schema_version() const { return store::read_schema_version(db(), path_); }

void ResultStore::set_busy_timeout_ms(int ms) {
  sqlite3_busy_timeout(db(), ms);
  busy_timeout_ms_ = ms;
}

}  // namespace fb
