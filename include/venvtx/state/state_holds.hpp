// Every recorded state holds its files: each RECORD-listed file of a distribution no earlier
// state held gets a second name in <store>/holds/ (a hard link: no byte copied; see HoldPolicy),
// and the distribution's layout (paths, modes, hashes) is kept by its RECORD's sha256.
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
// new to the store, or, once files can be held in another way than before (the setting
// `holds.method`: none, link, copy), whose layout counts files without a hold; never throws (a
// hold that cannot be made is counted in `unheld`).
HoldCount hold_state(const VenvLayout& layout, Store& store, const VenvState& state);

// -v: "held 48,912 file(s) of 125 distribution(s) in 612.40 ms" (nothing when none was new).
void say_held(const Output& out, const HoldCount& count);

// How the store holds the venv's files (`config hold`): a hard link on the venv's filesystem, a
// reflink where a link cannot be made and the filesystem has them; on another filesystem
// nothing, unless the setting is `copy`: then a copy of the bytes wherever neither can be made.
struct HoldPolicy {
    bool linkable = false;    // the store is on the venv's filesystem
    bool copies = false;      // `config hold copy`
    std::string unavailable;  // why nothing can be held, or ""
};
HoldPolicy hold_policy(const VenvLayout& layout, Store& store);

} // namespace venvtx
