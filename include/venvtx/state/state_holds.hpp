// Every recorded state holds its files: each RECORD-listed file of a distribution no earlier
// state held gets a second name in <store>/holds/ (a hard link: no byte copied), and the
// distribution's layout (paths, modes, hashes) is kept by its RECORD's sha256.
#pragma once

#include "venvtx/core/output.hpp"
#include "venvtx/state/venv_state.hpp"
#include "venvtx/store/store.hpp"
#include "venvtx/venv/layout.hpp"

#include <cstdint>
#include <string>

namespace venvtx {

struct HoldCount {
    std::int64_t dists = 0;   // distributions held now (layouts saved)
    std::int64_t linked = 0;  // files given a second name
    std::int64_t unheld = 0;  // files that got none
    double ms = 0;            // how long it took
};

// Holds what `state` lists that no layout holds yet. Touches only distributions whose RECORD is
// new to the store; never throws (a hold that cannot be made is counted in `unheld`).
HoldCount hold_state(const VenvLayout& layout, Store& store, const VenvState& state);

// -v: "held 48,912 file(s) of 125 distribution(s) in 612.40 ms" (nothing when none was new).
void say_held(const Output& out, const HoldCount& count);

// Why the store cannot hold the venv's files, or "" when it can: a hard link needs one filesystem.
std::string holds_unavailable(const VenvLayout& layout, Store& store);

} // namespace venvtx
