// `venvtx watch`: each change made outside venvtx (plain pip or uv) recorded as its own entry
// once the venv has been quiet for a moment, its new state's files held at once, so that every
// intermediate state of a session of plain commands is in the history and restorable.
#pragma once

#include "venvtx/txn/context.hpp"

namespace venvtx {

struct WatchOptions {
    double quiet_s = 1.0;  // how long the venv must be still before its state is recorded
};

// Runs in the foreground until SIGINT or SIGTERM (then exit 0). Sleeps in poll(2) on inotify
// between changes; takes the store's locks only to record, never while idle; a venvtx command
// or uv holding them is waited out by trying again once it is quiet.
int watch(const Context& context, const WatchOptions& options);

} // namespace venvtx
