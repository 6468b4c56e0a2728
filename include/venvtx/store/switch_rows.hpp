// The switch journal (migration 0011): for each phase of a transaction that switches its units
// into place, where each unit's shadow is and what recovery must do with it.
#pragma once

#include "venvtx/store/database.hpp"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

enum class SwitchState { building, ready, done };

struct SwitchRow {
    std::int64_t tx = 0;
    int phase = 0;
    std::string unit;    // venv-relative
    std::string shadow;  // venv-relative
    SwitchState state = SwitchState::building;
    bool fresh = false;  // nothing was at the unit's path: recovery completes its switch
    std::int64_t old_ino = 0;  // 0: the unit was absent
    std::int64_t new_ino = 0;  // 0: the shadow was absent (the unit goes)
};

// Each in one SQL transaction, durable when it returns.
void begin_switches(Database& db, const std::vector<SwitchRow>& rows);
void mark_switches_ready(Database& db, const std::vector<SwitchRow>& rows);
void mark_switches_done(Database& db, std::int64_t tx, int phase);
void forget_switches(Database& db, std::int64_t tx, int phase);
// The units a finished phase of `tx` switched (its rows stay `done`).
std::set<std::string> switched_units(Database& db, std::int64_t tx);
// Every row of `tx`, phase by phase, in their order.
std::vector<SwitchRow> switches_of(Database& db, std::int64_t tx);

} // namespace venvtx
