// `venvtx install` and `venvtx run`: any command that mutates the venv, as one transaction.
// Before it runs, every venv file is hard-linked into staging (one link() a file, no data
// copied); installers unlink before they write, so an old inode survives in staging. Afterwards
// a path whose inode changed, or that vanished, keeps its pre-image (hashed into the store);
// the other links are dropped. A file changed in place (same inode) has no pre-image unless
// --copy copied it beforehand: that is reported, never restored from a wrong image.
#pragma once

#include "venvtx/txn/context.hpp"

#include <string>
#include <vector>

namespace venvtx {

struct CommandOptions {
    std::string kind;                // "install" or "run"
    std::vector<std::string> argv;   // the command to run
    bool copy_small_files = false;   // --copy
    MutationOptions mutation;
};

Outcome run_command_transaction(const Context& context, const CommandOptions& options);

// The installer command for `venvtx install`: uv when on PATH (or asked for), else the venv's
// own `python -m pip` (never bin/pip, whose shebang may name another venv).
std::vector<std::string> installer_command(const VenvLayout& layout, const std::string& installer,
                                           const std::vector<std::string>& specs,
                                           const std::vector<std::string>& extra_args);

} // namespace venvtx
