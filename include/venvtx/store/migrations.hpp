// The schema migrations, generated at build time from migrations/NNNN_name.sql.
#pragma once

#include <span>

namespace venvtx {

struct Migration {
    int version;
    const char* name;
    const char* sql;
};

extern const std::span<const Migration> k_migrations;

} // namespace venvtx
