// `venvtx verify`: store objects against their names, venv files against their RECORD hashes.
#pragma once

#include "venvtx/txn/context.hpp"

#include <optional>
#include <string>
#include <vector>

namespace venvtx {

struct VerifyOptions {
    double sample_percent = 100;  // of loose store objects to re-hash, and of packs to stream
    // The store's lock is held while it reads (a gc packing beside it would move objects under
    // its feet); seconds to wait for it (0: exit 5 at once).
    std::optional<double> wait_s = 0.0;
};

struct VerifyProblem {
    std::string what;    // "corrupted object", "missing object", "modified file", "missing file", ...
    std::string path;    // object path or venv-relative file
    std::string owner;   // distribution (files) or "tx N: path" (objects)
    std::string detail;
};

struct VerifyReport {
    std::size_t objects_checked = 0;  // loose
    std::size_t packed_checked = 0;   // pack members
    std::size_t pending_checked = 0;  // removed files not hashed yet: checked by inode key
    std::size_t files_checked = 0;
    std::vector<VerifyProblem> problems;
    // Transactions not finished: running now, or interrupted (`recover` puts the venv back). Not
    // problems: verify cannot tell which without taking the lock a running one holds.
    std::vector<std::int64_t> unfinished;
};

VerifyReport verify(const Context& context, const VerifyOptions& options);

} // namespace venvtx
