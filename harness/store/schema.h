// The result store's schema: every table and column with what it holds, as a list of
// migrations that take a database from one version to the next, and opening a file with
// the checks that refuse what is not ours (or is newer) before anything is written.
#pragma once
#include <string>

struct sqlite3;

namespace fb::store {

// The newest schema this build reads and writes; the last migration in schema.cpp.
constexpr int kSchemaVersion = 12;

// Reads meta.schema_version: 0 for an empty database (never migrated). Throws fb::Error
// naming the path for a database that is not a fusebench store.
int read_schema_version(sqlite3* db, const std::string& path);

// Opens (creating it if missing) and brings the schema up to kSchemaVersion in one
// transaction. Throws fb::Error naming the path; a refused file is never modified, and
// the handle is closed on any failure.
sqlite3* open_and_migrate(const std::string& path, int busy_timeout_ms);

// Opens an existing store read-only, without migrating it (merge reads shards as they are).
sqlite3* open_read_only(const std::string& path, int busy_timeout_ms);

}  // namespace fb::store
