// `venvtx remove PATTERN...`: uninstall matching distributions as one transaction.
#pragma once

#include "venvtx/txn/context.hpp"

#include <string>
#include <vector>

namespace venvtx {

struct RemoveOptions {
    std::vector<std::string> patterns;
    MutationOptions mutation;
};

Outcome remove_distributions(const Context& context, const RemoveOptions& options);

} // namespace venvtx
