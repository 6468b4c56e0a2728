// A trapped call that venvtx makes itself, on the path it read from the caller once. Letting
// the call go on (SECCOMP_USER_NOTIF_FLAG_CONTINUE) would have the kernel read the caller's
// memory again, which another of its threads may have changed since: a file venvtx never
// captured would change. Emulated: the calls that lose bytes (unlink, rename over, truncate,
// open for writing); the rest only make things, which the check after the command sees.
#pragma once

#include "venvtx/core/unique_fd.hpp"

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <sys/types.h>

namespace venvtx {

// A path as the caller named it, pinned: `base` is venvtx's own descriptor for the directory a
// relative path starts from (the caller's working directory or dirfd, opened once), so neither
// a chdir nor a dup2 by another of its threads moves it between capture and call.
struct PinnedPath {
    std::shared_ptr<UniqueFd> base;  // none: an absolute path
    std::string text;                // /proc/self/... already made /proc/<pid>/...
    int error = 0;                   // the caller's dirfd was no directory: the call's errno

    int dirfd() const;
    std::string seen_from_here() const;  // the same path as a string venvtx can resolve
};

struct Emulation {
    std::function<long()> perform;  // the call's result, or -errno
    bool opens = false;             // perform() returns a descriptor of venvtx's, handed over
    bool close_on_exec = false;     // ... with O_CLOEXEC in the caller
};

// Whether venvtx may make calls for the process `pid`: the same mount namespace and root,
// the same credentials; `same_umask`: files it creates get the same modes too.
struct CallerMatch {
    bool same = false;
    bool same_umask = false;
};
CallerMatch match_caller(pid_t pid);

Emulation emulate_unlinkat(PinnedPath path, int flags);
Emulation emulate_renameat2(PinnedPath from, PinnedPath to, unsigned flags);
Emulation emulate_truncate(PinnedPath path, off_t length);
// open/openat/creat, or (given `how_resolve`) openat2, which checks its flags strictly. Nothing
// for a device, fifo or socket (opening one has effects of its own: the kernel opens it), for
// O_TMPFILE, or for a file to create with another umask than venvtx's.
std::optional<Emulation> emulate_open(PinnedPath path, std::uint64_t flags, std::uint64_t mode,
                                      std::optional<std::uint64_t> how_resolve, bool same_umask);

} // namespace venvtx
