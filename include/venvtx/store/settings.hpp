// The store's settings table: named values kept with the history (the retention policy, the
// defaults `venvtx config` saves).
#pragma once

#include "venvtx/store/database.hpp"

#include <optional>
#include <string>

namespace venvtx {

std::optional<std::string> read_setting(Database& db, const std::string& name);
void write_setting(Database& db, const std::string& name, const std::string& value);
void delete_setting(Database& db, const std::string& name);

} // namespace venvtx
