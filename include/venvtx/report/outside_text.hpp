// How changes made outside a transaction read: a count with one example, and JSON.
#pragma once

#include "venvtx/capture/live_scan.hpp"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace venvtx {

// "2 path(s), e.g. lib/python3.11/site-packages/alpha/data.txt (modified)"; `changes` not empty.
std::string outside_summary(const std::vector<LiveChange>& changes);

// [{"path": ..., "change": "added" | "removed" | "modified"}, ...]: JSON's `changed_outside`.
nlohmann::json outside_json(const std::vector<LiveChange>& changes);

} // namespace venvtx
