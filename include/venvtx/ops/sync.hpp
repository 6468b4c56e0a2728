// `venvtx sync --to POINT`: the venv put in a point's versions through its installer, where
// venvtx holds no copy of that state's files (as `uv pip sync` of a lock, `conda install
// --revision N`): what the point lacks uninstalled, every version it had that differs installed
// exactly (--no-deps), as one `sync` transaction — captured, previewed and probed like any.
#pragma once

#include "venvtx/ops/command.hpp"
#include "venvtx/txn/context.hpp"

#include <string>
#include <vector>

namespace venvtx {

struct SyncOptions {
    std::string point;                         // as `freeze --at` reads it
    Installer installer = Installer::automatic;
    CaptureMode capture = CaptureMode::automatic;
    bool copy_small_files = false;
    std::vector<std::string> installer_args;  // after --: the user's index options
    MutationOptions mutation;
};

Outcome sync_to(const Context& context, const SyncOptions& options);

} // namespace venvtx
