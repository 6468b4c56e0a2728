// The orders in which a transaction's directories must be made and removed.
#pragma once

#include "venvtx/store/history.hpp"

#include <vector>

namespace venvtx {

std::vector<Entry*> dirs_deepest_first(std::vector<Entry>& entries);
std::vector<Entry*> dirs_shallowest_first(std::vector<Entry>& entries);

} // namespace venvtx
