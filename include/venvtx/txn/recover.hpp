// Recovery of transactions a crash (or a failed restore) left unfinished: each is brought back
// to exactly its before-state, and the index says so ('rolled_back').
#pragma once

#include "venvtx/store/store.hpp"
#include "venvtx/txn/context.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace venvtx {

// Recovers every unfinished transaction, then removes preview layers a killed venvtx left;
// returns the recovered ids. The store must be locked.
std::vector<std::int64_t> recover_interrupted(const Context& context, Store& store);

// Brings every path transaction `tx` journaled back to its before-state, from what the index
// and the store hold (pre-images in staging or adopted, paths a command added removed); the
// transaction's state is the caller's to set. Repeatable: an interrupted call can run again.
// Returns the paths that are not back (checked), including new paths nothing attributes to it.
// `switched`: each unit goes back at once (txn/switching.hpp), as a command's restore does;
// `recover` goes path by path, after settling what a kill left of a switch.
std::vector<std::string> restore_journaled(const Context& context, Store& store, std::int64_t tx,
                                           const std::string& kind, bool switched);

// Run at the start of every mutating command: recovers, or exits 5 when recovery fails.
void recover_before_mutating(const Context& context, Store& store);

} // namespace venvtx
