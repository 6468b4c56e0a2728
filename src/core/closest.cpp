// closest: edit distance with swaps of neighbours counted as one edit.
#include "venvtx/core/closest.hpp"

#include <algorithm>
#include <cstddef>

namespace venvtx {

namespace {

// Edits between `a` and `b`: insertions, deletions, substitutions and swaps of two neighbours
// (optimal string alignment), three rows at a time.
std::size_t distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> before(b.size() + 1), previous(b.size() + 1), current(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) {
        previous[j] = j;
    }
    for (std::size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t change = a[i - 1] == b[j - 1] ? 0 : 1;
            current[j] = std::min({previous[j] + 1, current[j - 1] + 1, previous[j - 1] + change});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
                current[j] = std::min(current[j], before[j - 2] + 1);
            }
        }
        std::swap(before, previous);
        std::swap(previous, current);
    }
    return previous[b.size()];
}

} // namespace

std::optional<std::string> closest(const std::string& word, const std::vector<std::string>& candidates) {
    std::size_t allowed = std::max<std::size_t>(1, word.size() / 3);
    std::optional<std::string> best;
    std::size_t best_distance = allowed + 1;
    for (const auto& candidate : candidates) {
        std::size_t d = distance(word, candidate);
        if (d == 0) {
            return std::nullopt;
        }
        if (d < best_distance) {
            best = candidate;
            best_distance = d;
        }
    }
    return best;
}

} // namespace venvtx
