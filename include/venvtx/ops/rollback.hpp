// `venvtx rollback [--to TX]`: undo the newest transaction not yet undone, or every one after TX.
#pragma once

#include "venvtx/txn/context.hpp"

#include <cstdint>
#include <optional>

namespace venvtx {

struct RollbackOptions {
    std::optional<std::int64_t> to;
    bool redo = false;  // undo the newest rollback instead
    MutationOptions mutation;
};

Outcome rollback(const Context& context, const RollbackOptions& options);

} // namespace venvtx
