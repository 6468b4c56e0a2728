// venv_facts (migration 0010): what the store knows of its venv, one row per fact (the venv it
// belongs to, the state recorded last, the dist-info keys the last observation saw).
#pragma once

#include "venvtx/store/database.hpp"

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace venvtx {

std::optional<std::string> venv_fact(Database& db, const std::string& name);
// Sets every (name, value) pair; call inside an SQL transaction or alone.
void set_venv_facts(Database& db, const std::vector<std::pair<std::string, std::string>>& facts);

} // namespace venvtx
