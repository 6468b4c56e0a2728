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
};

Outcome remove_distributions(const Context& context, const RemoveOptions& options);

} // namespace venvtx
