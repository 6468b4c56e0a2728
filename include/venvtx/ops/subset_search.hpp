// The search behind `remove --keep-going`: the largest subset of the named distributions whose
// removal passes the probe. It assumes only what removing files can do: a probe that fails with
// a set removed also fails with any larger set removed. So a distribution whose removal alone
// fails is kept (one probe each, run side by side); the others are tried together; only when
// that fails too do they interact, and then their subsets are tried largest first, skipping any
// that holds a set known to fail: exhaustively for up to 8 such distributions; beyond, greedily
// (each added while the set still passes: no single one more could go).
// The impact analysis only orders the candidates (the likeliest to pass first); every verdict
// is a probe's.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace venvtx {

struct Trial {
    std::vector<std::string> removed;  // sorted
    bool passed = false;
    std::string error;  // the probe's, when it failed
};

// Probes each set (removing it from the venv as it is now); results in the same order.
using TrialRunner = std::function<std::vector<Trial>(const std::vector<std::vector<std::string>>&)>;

struct SubsetSearch {
    std::vector<std::string> removed;   // the largest set that passed (empty: none did)
    std::map<std::string, Trial> kept;  // each kept distribution, with a failed trial that holds it
    std::vector<Trial> trials;          // every trial, `whole` first
    bool exact = true;                  // false where more than 8 interacting ones were searched greedily
};

// `whole`: the trial of all `names`, already run. `risk`: higher for a distribution whose
// removal the impact analysis expects to break something (tried last). `batch`: how many sets
// are handed to `run` at once (previews run side by side).
SubsetSearch largest_passing_subset(std::vector<std::string> names, const Trial& whole, const TrialRunner& run,
                                    const std::function<int(const std::string&)>& risk, std::size_t batch);

} // namespace venvtx
