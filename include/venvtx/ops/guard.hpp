// `venvtx guard on|off|status`: while on, a plain `pip install|uninstall` run by the venv's
// interpreter (pip, pip3, python -m pip) and `uv pip install|uninstall|sync` aimed at the
// activated venv run as `venvtx run` transactions, with the saved probe (ops/guard_hooks holds
// the hooks; docs/usage.md lists what is caught and what is not). VENVTX_GUARD=0 bypasses it for
// one command. Off removes the hooks: the venv is byte for byte as before `on`.
#pragma once

#include "venvtx/txn/context.hpp"

#include <string>
#include <vector>

namespace venvtx {

struct GuardStatus {
    bool on = false;       // the .pth hook is in place
    bool current = false;  // each hook in place is as this venvtx writes it
    bool changed = false;  // this command wrote or removed a hook
    std::string binary;    // the venvtx the hooks run ("" when off)
    bool binary_runs = false;           // that file exists and is executable
    std::vector<std::string> hooks;     // the hook files in place
    std::string uv_left;                // why bin/uv is not guarded ("" when it is, or is absent)
    std::vector<std::string> probe;     // the saved probe each guarded change runs
};

GuardStatus guard_status(const Context& context);
// Writes the hooks (again, where an older venvtx build wrote them); the store is made first and
// the venv's state recorded and held, under both locks.
GuardStatus guard_on(const Context& context);
// Removes the hooks the guard wrote, and nothing else.
GuardStatus guard_off(const Context& context);

} // namespace venvtx
