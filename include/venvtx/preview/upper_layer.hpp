// Reading what a preview changed: the overlay's upper layer, as journal entries against the
// live venv. A whiteout is a deletion (of the live node, a whole directory included); an
// opaque directory replaces the live one's contents; any other node is the path's new state
// (a new or copied-up file, a symlink, a directory). Files are hashed, so that the live venv
// can be checked against exactly what was probed once the layer's files are renamed into it.
#pragma once

#include "venvtx/store/history.hpp"
#include "venvtx/venv/layout.hpp"

#include <filesystem>
#include <set>
#include <string>
#include <vector>

namespace venvtx {

// `hidden`: venv-relative paths that are never part of a change (the store, .lock).
std::vector<Entry> read_upper_layer(const std::filesystem::path& upper, const VenvLayout& layout,
                                    const std::set<std::string>& hidden);

} // namespace venvtx
