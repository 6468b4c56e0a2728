// Sealing the private view: nothing run inside it (the command, the probe) can leave it.
#pragma once

namespace venvtx {

// Drops, from every capability set of this process and from its bounding set (so nothing it
// executes gets them back, root included), the capabilities that undo or step around the view:
// CAP_SYS_ADMIN (umount, mount, pivot_root, setns) and CAP_SYS_PTRACE (another process's
// /proc/PID/root, which leads into the live mount namespace). Throws PreviewUnavailable.
void seal_view();

} // namespace venvtx
