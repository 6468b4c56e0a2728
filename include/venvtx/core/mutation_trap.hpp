// Watching a command's file changes as they happen: a seccomp filter, installed in the child
// before exec and inherited by every process it starts, stops a process just before a system
// call that could change a file (unlink, rename, open for writing, chmod, ...) and hands the
// paths to a handler; once the handler returns, the kernel makes the call, as the command's own,
// with all of its rights and limits: venvtx never makes a call for it. io_uring is refused, a
// call the handler fails is refused (EIO), and once the watcher is gone every trapped call fails
// (ENOSYS) instead of running unseen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

namespace venvtx {

enum class ChangeKind {
    replace,  // unlinked, renamed over, created or re-attributed: a hard link keeps the old bytes
    write,    // opened for writing or truncated: the old bytes change in place, only a copy keeps them
    move_tree,   // renamed away: everything below it moves too
    second_name, // the existing file a link() names: the next change is its new name
    special,     // a device, fifo or whiteout about to be made (mknod)
    mount        // a mount, unmount, pivot_root or chroot onto this path
};

struct PendingChange {
    std::filesystem::path path;  // absolute; its directory resolved (symlinks followed)
    ChangeKind kind = ChangeKind::replace;
    std::filesystem::path moves_to;  // move_tree: where its inode goes (a rename's other side)
};

// Thrown by a ChangeHandler to refuse a call outright: the caller gets EPERM (any other
// exception gives EIO); either way the watched command has failed.
class RefusedChange : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

using ChangeHandler = std::function<void(const std::vector<PendingChange>&)>;

class MutationTrap {
public:
    // Whether this kernel lets an unprivileged process watch a child this way (x86_64, Linux 5.5+,
    // seccomp not forbidden by a container); probed once in a short-lived child.
    static bool supported();

    MutationTrap();
    ~MutationTrap();
    MutationTrap(const MutationTrap&) = delete;
    MutationTrap& operator=(const MutationTrap&) = delete;

    // In the child, between fork and exec: installs the filter and hands its listener to the
    // parent. Exits the child (status 126) when that fails.
    void install_in_child() noexcept;
    // In the parent, after fork: takes the listener the child sent.
    void receive_listener();
    int listener() const { return m_listener; }
    // Serves one trapped call: names its changes to `handler`, then lets it run, or refuses it
    // (EIO) if the handler throws; the first such error is failure().
    void serve_one(const ChangeHandler& handler);
    const std::optional<std::string>& failure() const { return m_failure; }
    std::size_t served() const { return m_served; }

private:
    int m_socket[2] = {-1, -1};
    int m_listener = -1;
    std::optional<std::string> m_failure;
    std::size_t m_served = 0;
};

} // namespace venvtx
