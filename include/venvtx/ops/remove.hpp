// ops/ holds what commands ask for, one family a file, above the engine.
//
// `venvtx remove PATTERN...`: uninstall matching distributions as one transaction, after saying
// which shared libraries would lose their last provider; with --keep-going, commit the largest
// subset whose removal passes the probe.
#pragma once

#include "venvtx/txn/context.hpp"

#include <string>
#include <vector>

namespace venvtx {

struct RemoveOptions {
    std::vector<std::string> patterns;
    MutationOptions mutation;
    bool keep_going = false;
    std::size_t jobs = 0;             // --jobs: previews side by side in a --keep-going search (0: 4)
    bool no_system_fallback = false;  // --keep-going: a library left to a system copy counts as a failure
    bool strict = false;              // --strict: a pattern that matches nothing is an error, not skipped
};

Outcome remove_distributions(const Context& context, const RemoveOptions& options);

} // namespace venvtx
