// Watching a command's file changes as they happen: a seccomp filter, installed in the child
// before exec and inherited by every process it starts, stops a process just before a system
// call that could change a file (unlink, rename, open for writing, chmod, ...) and hands the
// paths to a handler; the call proceeds once the handler returns, made by venvtx itself on the
// paths the handler saw where it would lose bytes (core/emulated_call). Nothing slips past: io_uring
// is refused, a call the handler fails is refused (EIO), and once the watcher is gone every
// trapped call fails (ENOSYS) instead of running unseen.
#pragma once

#include "venvtx/core/emulated_call.hpp"

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

struct seccomp_notif_resp;

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
    std::size_t emulated() const { return m_emulated; }  // of those, the calls venvtx made itself

private:
    // Makes the call `emulation` describes and fills `response` with its result; true when
    // the answer went with a descriptor handed over (nothing more to send).
    bool answer(std::uint64_t id, const Emulation& emulation, seccomp_notif_resp& response);

    int m_socket[2] = {-1, -1};
    int m_listener = -1;
    std::optional<std::string> m_failure;
    std::size_t m_served = 0;
    std::size_t m_emulated = 0;
};

} // namespace venvtx
