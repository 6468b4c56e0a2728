// A removal that leaves a staying distribution without a shared library it loads is not made
// unprobed by accident (issue 40): without a probe (given or saved) it is refused before
// anything moves, naming the library, who needs it, and the probe that would check it.
#pragma once

#include "venvtx/elf/removal_impact.hpp"
#include "venvtx/txn/context.hpp"
#include "venvtx/venv/inventory.hpp"

#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct Breakage {
    std::string what;  // the library, who provided it, who needs it
    std::string how;   // the ways on: the probe that would check it, --force
    std::vector<std::string> libraries;  // every soname a staying distribution loses
    std::string needed_by;               // the distribution named
    std::string probe;                   // the probe suggested ("" when none was found)
};

// What the refusal would say, or nullopt when no library a staying distribution loads loses its
// last venv provider (a system copy the loader would fall back to is another file: it counts).
std::optional<Breakage> unprobed_breakage(const RemovalImpact& impact, const std::vector<Distribution>& inventory);

// Whether the change runs with no probe and nobody said so (--no-probe, --force): then a
// breakage is refused.
bool unprobed_unasked(const MutationOptions& options);

// Throws the refusal (exit 2, kind `unprobed_breakage`) when unprobed_unasked and a library breaks.
void refuse_unprobed_breakage(const MutationOptions& options, const RemovalImpact& impact,
                              const std::vector<Distribution>& inventory);

} // namespace venvtx
