// Database: SQLite connection, statements and ordered schema migrations.
#include "venvtx/store/database.hpp"

#include "venvtx/core/clock.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/store/migrations.hpp"
#include "venvtx/store/pinned_vfs.hpp"

#include <cctype>
#include <cstring>
#include <fcntl.h>
#include <sqlite3.h>
#include <unistd.h>

namespace venvtx {

namespace {

[[noreturn]] void fail(sqlite3* db, const std::string& what) {
    throw Error(ExitCode::internal, "store index: " + what + ": " + sqlite3_errmsg(db));
}

} // namespace

Statement::Statement(sqlite3* db, const std::string& sql) : m_db(db) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &m_stmt, nullptr) != SQLITE_OK) {
        fail(db, "prepare '" + sql + "'");
    }
}

Statement::~Statement() { sqlite3_finalize(m_stmt); }

Statement& Statement::bind(int index, std::int64_t value) {
    sqlite3_bind_int64(m_stmt, index, value);
    return *this;
}

Statement& Statement::bind(int index, const std::string& value) {
    sqlite3_bind_text(m_stmt, index, value.c_str(), static_cast<int>(value.size()), SQLITE_TRANSIENT);
    return *this;
}

Statement& Statement::bind(int index, const std::optional<std::string>& value) {
    return value ? bind(index, *value) : bind_null(index);
}

Statement& Statement::bind_null(int index) {
    sqlite3_bind_null(m_stmt, index);
    return *this;
}

bool Statement::step() {
    int rc = sqlite3_step(m_stmt);
    if (rc == SQLITE_ROW) {
        return true;
    }
    if (rc != SQLITE_DONE) {
        fail(m_db, "step");
    }
    return false;
}

void Statement::run() {
    while (step()) {
    }
    reset();
}

void Statement::reset() {
    sqlite3_reset(m_stmt);
    sqlite3_clear_bindings(m_stmt);
}

std::int64_t Statement::integer(int column) const { return sqlite3_column_int64(m_stmt, column); }

Statement& Statement::bind_blob(int index, const std::string& bytes) {
    sqlite3_bind_blob(m_stmt, index, bytes.data(), static_cast<int>(bytes.size()), SQLITE_TRANSIENT);
    return *this;
}

std::string Statement::blob(int column) const {
    const void* value = sqlite3_column_blob(m_stmt, column);
    return value ? std::string(static_cast<const char*>(value), static_cast<size_t>(sqlite3_column_bytes(m_stmt, column)))
                 : std::string();
}

std::string Statement::text(int column) const {
    const unsigned char* value = sqlite3_column_text(m_stmt, column);
    return value ? std::string(reinterpret_cast<const char*>(value),
                               static_cast<size_t>(sqlite3_column_bytes(m_stmt, column)))
                 : std::string();
}

std::optional<std::string> Statement::optional_text(int column) const {
    if (is_null(column)) {
        return std::nullopt;
    }
    return text(column);
}

std::optional<std::int64_t> Statement::optional_integer(int column) const {
    if (is_null(column)) {
        return std::nullopt;
    }
    return integer(column);
}

bool Statement::is_null(int column) const { return sqlite3_column_type(m_stmt, column) == SQLITE_NULL; }

Database::Database(const std::filesystem::path& path) {
    open(path.string(), path, nullptr);
}

Database::Database(UniqueFd directory, const std::string& name, const std::filesystem::path& shown)
    : m_directory(std::move(directory)) {
    open("/proc/self/fd/" + std::to_string(m_directory.get()) + "/" + name, shown, pinned_vfs());
}

void Database::open(const std::string& file, const std::filesystem::path& shown, const char* vfs) {
    if (::faccessat(AT_FDCWD, file.c_str(), F_OK, AT_EACCESS) == 0 &&
        ::faccessat(AT_FDCWD, file.c_str(), W_OK, AT_EACCESS) != 0) {
        open_read_only(file, shown, vfs);
        return;
    }
    // NOMUTEX: a connection is only ever used by the thread that opened it; SQLite's own
    // per-call locking was an eighth of a long `log`.
    if (sqlite3_open_v2(file.c_str(), &m_db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, vfs) !=
        SQLITE_OK) {
        std::string message = m_db ? sqlite3_errmsg(m_db) : "out of memory";
        sqlite3_close(m_db);
        throw Error(ExitCode::internal, "cannot open store index " + shown.string() + ": " + message);
    }
    sqlite3_busy_timeout(m_db, 10000);
    // Switching a new index to WAL takes a lock the busy handler does not wait for: a second
    // venvtx opening the same fresh store retries instead of failing.
    for (int attempt = 0; sqlite3_exec(m_db, "PRAGMA journal_mode=WAL", nullptr, nullptr, nullptr) == SQLITE_BUSY &&
                          attempt < 200;
         ++attempt) {
        sqlite3_sleep(50);
    }
    exec("PRAGMA synchronous=FULL");
    migrate(); // with foreign keys off, as SQLite asks of a migration that rebuilds a table
    exec("PRAGMA foreign_keys=ON");
}

// Another user's store (root's, read by a user): WAL readers need the -shm file, which only
// a writable directory lets them create; without one, the index is read as it is on disk
// (immutable), which is every committed transaction once the last writer has closed it.
void Database::open_read_only(const std::string& file, const std::filesystem::path& shown, const char* vfs) {
    std::string uri = "file:";
    for (unsigned char c : file) {
        static const char* k_hex = "0123456789ABCDEF";
        bool plain = std::isalnum(c) || std::strchr("/-._~", c) != nullptr;
        uri += plain ? std::string(1, static_cast<char>(c)) : std::string{'%', k_hex[c >> 4], k_hex[c & 15]};
    }
    std::string shm = file + "-shm";
    std::string dir = file.substr(0, file.rfind('/'));
    bool shm_readable = ::faccessat(AT_FDCWD, shm.c_str(), R_OK, AT_EACCESS) == 0;
    bool dir_writable = ::faccessat(AT_FDCWD, dir.c_str(), W_OK, AT_EACCESS) == 0;
    uri += shm_readable || dir_writable ? "?mode=ro" : "?mode=ro&immutable=1";
    if (sqlite3_open_v2(uri.c_str(), &m_db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, vfs) !=
        SQLITE_OK) {
        std::string message = m_db ? sqlite3_errmsg(m_db) : "out of memory";
        sqlite3_close(m_db);
        throw Error(ExitCode::internal, "cannot open store index " + shown.string() + " (read-only): " + message);
    }
    sqlite3_busy_timeout(m_db, 10000);
    if (schema_version() < static_cast<int>(k_migrations.back().version)) {
        throw Error(ExitCode::locked, "the store index " + shown.string() +
                                          " is from an older venvtx and read-only for this user: any venvtx "
                                          "command run by its owner upgrades it");
    }
    m_read_only = true;
}

Database::~Database() { sqlite3_close(m_db); }

void Database::exec(const std::string& sql) {
    char* message = nullptr;
    if (sqlite3_exec(m_db, sql.c_str(), nullptr, nullptr, &message) != SQLITE_OK) {
        std::string text = message ? message : "unknown error";
        sqlite3_free(message);
        throw Error(ExitCode::internal, "store index: " + text);
    }
}

std::int64_t Database::last_insert_id() const { return sqlite3_last_insert_rowid(m_db); }

int Database::schema_version() {
    Statement query(m_db, "SELECT COALESCE(MAX(version), 0) FROM schema_version");
    query.step();
    return static_cast<int>(query.integer(0));
}

void Database::migrate() {
    exec("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER PRIMARY KEY, name TEXT NOT "
         "NULL, applied_at TEXT NOT NULL)");
    for (const Migration& migration : k_migrations) {
        SqlTransaction transaction(*this); // read inside: another process may migrate first
        if (migration.version <= schema_version()) {
            continue;
        }
        exec(migration.sql);
        prepare("INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)")
            .bind(1, static_cast<std::int64_t>(migration.version))
            .bind(2, std::string(migration.name))
            .bind(3, utc_now_iso8601())
            .run();
        transaction.commit();
    }
}

SqlTransaction::SqlTransaction(Database& db) : m_db(db) { m_db.exec("BEGIN IMMEDIATE"); }

SqlTransaction::~SqlTransaction() {
    if (!m_done) {
        try {
            m_db.exec("ROLLBACK");
        } catch (...) {
        }
    }
}

void SqlTransaction::commit() {
    m_db.exec("COMMIT");
    m_done = true;
}

} // namespace venvtx
