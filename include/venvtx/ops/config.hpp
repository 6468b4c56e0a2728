// `venvtx config`: defaults saved with the venv's history, so that a team sets its probe once:
// probe (one or more lines of code), gpus, preview, probe-timeout, hold, and the retention policy
// (keep, older-than, max-size, auto-gc). A flag given on the command line wins over a saved
// value; --no-probe drops a saved probe for one command.
#pragma once

#include "venvtx/txn/context.hpp"

#include <optional>
#include <string>
#include <vector>

namespace venvtx {

// What mutating commands take from the store when their flags leave it open.
struct SavedDefaults {
    std::vector<std::string> probe;
    std::optional<std::string> gpus;
    std::optional<std::string> preview;
    std::optional<double> probe_timeout;
};

// The saved defaults (none when there is no store yet); the store is only read.
SavedDefaults saved_defaults(const Context& context);

struct ConfigRequest {
    std::optional<std::string> key;   // none: list every key
    std::vector<std::string> values;  // none: show the key (or, with unset, forget it)
    bool unset = false;
};

// Lists, shows, sets or unsets; prints the result (text or the --json document). A bad key or
// value is a usage Error (kind "usage"), nothing saved.
void configure(const Context& context, const ConfigRequest& request);

} // namespace venvtx
