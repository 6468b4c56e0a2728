// `venvtx rollback [TX | --to N | --redo]`: undo the newest transaction not yet undone; or one
// older transaction alone, when nothing it touched changed since; or every transaction after
// entry N (0: all) as one transaction, probed once, all or nothing.
#pragma once

#include "venvtx/txn/context.hpp"

#include <cstdint>
#include <optional>

namespace venvtx {

struct RollbackOptions {
    std::optional<std::int64_t> tx;  // undo this one alone
    std::optional<std::int64_t> to;
    bool redo = false;  // undo the newest rollback instead
    MutationOptions mutation;
};

Outcome rollback(const Context& context, const RollbackOptions& options);

} // namespace venvtx
