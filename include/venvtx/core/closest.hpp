// "Did you mean": the candidate nearest a mistyped word, for the errors a person reads.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace venvtx {

// The candidate within a small edit distance of `word` (one edit for short words, up to a third
// of its length for longer ones), nearest first; nullopt when none is near or `word` is one.
std::optional<std::string> closest(const std::string& word, const std::vector<std::string>& candidates);

} // namespace venvtx
