// GroupWatchdog: a command's process group does not outlive a venvtx killed while it runs.
// PR_SET_PDEATHSIG ends the direct child only; what it started (a shell's `pip`, a build's
// workers) would go on changing the venv after a kill -9 or an OOM kill, while `recover` runs.
#pragma once

#include <sys/types.h>

namespace venvtx {

class GroupWatchdog {
public:
    // The socket the helper will wait on: made before the command is forked, so that a
    // failure (an Error) comes while nothing runs yet.
    GroupWatchdog();
    // Forks the helper: at end of file with no word from this process (it died: the kernel
    // closed its end), it kills `group` and exits. False (errno set) when it cannot be forked.
    bool guard(pid_t group);
    // Tells the helper the command is over and reaps it; the group is left alone.
    ~GroupWatchdog();
    GroupWatchdog(const GroupWatchdog&) = delete;
    GroupWatchdog& operator=(const GroupWatchdog&) = delete;

    // As the destructor, earlier: before the caller kills its own orphaned children, whom the
    // helper is one of.
    void dismiss();

private:
    int m_ends[2] = {-1, -1}; // ours, the helper's
    pid_t m_helper = -1;
};

} // namespace venvtx
