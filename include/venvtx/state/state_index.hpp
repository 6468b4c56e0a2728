// States and RECORD texts in the index (migration 0010): each kept once, by its id or sha256.
#pragma once

#include "venvtx/state/venv_state.hpp"
#include "venvtx/store/database.hpp"

#include <optional>
#include <string>

namespace venvtx {

// Inserts the state unless the index has it. Call inside an SQL transaction or alone.
void save_state(Database& db, const VenvState& state);
bool has_state(Database& db, const std::string& id);
std::optional<VenvState> load_state(Database& db, const std::string& id);

bool has_record_text(Database& db, const std::string& sha256);
void save_record_text(Database& db, const std::string& sha256, const std::string& text);
// The RECORD text kept under `sha256`; nullopt when the index lacks it.
std::optional<std::string> load_record_text(Database& db, const std::string& sha256);

} // namespace venvtx
