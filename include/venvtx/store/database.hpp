// A thin RAII layer over SQLite: one connection, prepared statements, scoped transactions,
// and the schema migrations (migrations/NNNN_*.sql, compiled into the binary).
#pragma once

#include "venvtx/core/unique_fd.hpp"

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

struct sqlite3;
struct sqlite3_stmt;

namespace venvtx {

class Statement {
public:
    Statement(sqlite3* db, const std::string& sql);
    ~Statement();
    Statement(const Statement&) = delete;
    Statement& operator=(const Statement&) = delete;

    Statement& bind(int index, std::int64_t value);
    Statement& bind(int index, const std::string& value);
    Statement& bind(int index, const std::optional<std::string>& value);
    Statement& bind_null(int index);
    Statement& bind_blob(int index, const std::string& bytes);
    // Returns true while a row is available.
    bool step();
    void run();  // step to completion, expecting no rows
    void reset();

    std::int64_t integer(int column) const;
    std::string text(int column) const;
    std::string blob(int column) const;
    std::optional<std::string> optional_text(int column) const;
    std::optional<std::int64_t> optional_integer(int column) const;
    bool is_null(int column) const;

private:
    sqlite3* m_db;
    sqlite3_stmt* m_stmt = nullptr;
};

class Database {
public:
    // Opens (creating if needed) with WAL and synchronous=FULL, then applies migrations; an
    // index this user cannot write is opened read-only, as it is.
    explicit Database(const std::filesystem::path& path);
    // The same for `name` in `directory`, a directory the caller opened and checked: SQLite
    // reaches it (and its -wal and -shm) through /proc/self/fd, never by a path someone could
    // swap meanwhile (store/pinned_vfs). `shown`: the path messages name.
    Database(UniqueFd directory, const std::string& name, const std::filesystem::path& shown);
    ~Database();
    Database(const Database&) = delete;
    Database& operator=(const Database&) = delete;

    void exec(const std::string& sql);
    Statement prepare(const std::string& sql) { return Statement(m_db, sql); }
    std::int64_t last_insert_id() const;
    int schema_version();
    bool read_only() const { return m_read_only; }

private:
    void open(const std::string& file, const std::filesystem::path& shown, const char* vfs);
    void migrate();
    void open_read_only(const std::string& file, const std::filesystem::path& shown, const char* vfs);
    UniqueFd m_directory;  // what a pinned file name goes through
    sqlite3* m_db = nullptr;
    bool m_read_only = false;
};

// BEGIN IMMEDIATE ... COMMIT; rolls back when destroyed uncommitted.
class SqlTransaction {
public:
    explicit SqlTransaction(Database& db);
    ~SqlTransaction();
    void commit();

private:
    Database& m_db;
    bool m_done = false;
};

} // namespace venvtx
