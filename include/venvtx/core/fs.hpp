// The filesystem seam: every mutating system call venvtx makes goes through Fs, confined to the
// venv and the store (Confinement: no symlink is followed on the way), so tests can
// inject a crash (VENVTX_FAILPOINT=N: SIGKILL before the Nth step) or an I/O error
// (VENVTX_FAULT=N:ENOSPC|EIO[:persist]: the Nth step, or every step from it, fails), and learn
// how many steps a run took (VENVTX_FAILPOINT_TALLY=FILE: written at exit); the holds' links
// have their own set (VENVTX_HOLD_FAILPOINT, VENVTX_HOLD_FAULT, VENVTX_HOLD_FAILPOINT_TALLY).
#pragma once

#include "venvtx/core/error.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <cstdint>
#include <filesystem>
#include <set>
#include <string>
#include <sys/types.h>
#include <vector>

namespace venvtx {

namespace stdfs = std::filesystem;

// A failed mutating call; errno_value() lets callers handle EXDEV, EEXIST, ENOENT.
class FsError : public Error {
public:
    // Kind "system": a failed (or refused) system call, its errno in the details.
    FsError(const std::string& message, int err);
    int errno_value() const { return m_errno; }

private:
    int m_errno;
};

// One set of failpoints: SIGKILL before the Nth step, or an errno at the Nth (or every step
// from it, with :persist), from environment variables; the process that read them writes the
// number of steps it counted to the tally file, if one is named, when it exits.
struct Failpoints {
    Failpoints(const char* kill_variable, const char* fault_variable, const char* tally_variable);
    ~Failpoints();
    Failpoints(const Failpoints&) = delete;
    Failpoints& operator=(const Failpoints&) = delete;
    // Counts a step; may kill the process; the errno to fail it with, or 0.
    int count();

    std::uint64_t steps = 0;
    std::uint64_t kill_at = 0;
    std::uint64_t fault_at = 0;
    int fault_errno = 0;
    bool fault_persist = false;
    std::string tally;
    pid_t owner = 0;
};

class Fs {
public:
    // The process-wide seam, configured from the environment on first use.
    static Fs& instance();

    void rename(const stdfs::path& from, const stdfs::path& to);
    // renameat2(RENAME_EXCHANGE): `a` and `b` trade places at once (EINVAL where the
    // filesystem refuses it).
    void exchange(const stdfs::path& a, const stdfs::path& b);
    // rename(), or where `from` and `to` are on different filesystems (a store placed elsewhere)
    // a copy (with `mode`) made whole at move_temporary(to), renamed over `to`, then `from`
    // unlinked; a symlink is recreated the same way.
    void move(const stdfs::path& from, const stdfs::path& to, mode_t mode);
    // Where a move across filesystems builds its copy of `to`: recovery removes one it finds.
    static stdfs::path move_temporary(const stdfs::path& to);
    void unlink(const stdfs::path& path);
    void rmdir(const stdfs::path& path);
    void mkdir(const stdfs::path& path, mode_t mode);
    void mkdirs(const stdfs::path& path);
    // A directory made at `to` as `from` is: its owner and group, extended attributes and mode
    // (set-id bits, group write: no umask), but with the owner's rwx, so that it can be filled.
    // EPERM where this process cannot give it that owner or group (not root).
    void clone_dir(const stdfs::path& from, const stdfs::path& to);
    // Removes `path` and, for a directory, everything below it, never following a symlink.
    void remove_tree(const stdfs::path& path);
    void symlink(const std::string& target, const stdfs::path& link);
    void mkfifo(const stdfs::path& path, mode_t mode);
    void link(const stdfs::path& existing, const stdfs::path& new_path);
    // link(), or where the two are on different filesystems, a whole copy with `mode`.
    void link_or_copy(const stdfs::path& existing, const stdfs::path& new_path, mode_t mode);
    void chmod(const stdfs::path& path, mode_t mode);
    // As root, a node venvtx made (a directory, symlink or fifo a restore brings back) takes its
    // directory's owner: root restoring another user's venv leaves nothing owned by root.
    void take_parent_owner(const stdfs::path& path);
    // As root, `path` (never followed) gets this owner and group: a directory brought back as it
    // was journaled. Anyone else's nodes are theirs already.
    void give_owner(const stdfs::path& path, uid_t uid, gid_t gid);
    // Removes overlayfs's private xattrs (trusted.overlay.*, user.overlay.*) from a node renamed
    // out of a preview layer into the live venv.
    void drop_overlay_xattrs(const stdfs::path& path);
    void set_mtime(const stdfs::path& path, std::int64_t mtime_ns);
    // Copies `from` to `to` (created exclusively with `mode`) and fsyncs it: holes stay holes,
    // and extended attributes, times and (as root) the owner are kept.
    void copy_file(const stdfs::path& from, const stdfs::path& to, mode_t mode);
    // copy_file() to a temporary beside `to` (move_temporary), then renamed there: `to` exists
    // whole or not at all, whether the disk fills or venvtx is killed mid-copy. For pre-images,
    // which a restore puts back over the file they copy.
    void copy_whole(const stdfs::path& from, const stdfs::path& to, mode_t mode);
    void fsync_dir(const stdfs::path& dir);
    // A new file written in pieces (a pack): created exclusively with `mode`, each write and the
    // final fsync a step of its own.
    UniqueFd create_file(const stdfs::path& path, mode_t mode);
    void write(int fd, const void* data, std::size_t size, const stdfs::path& path);
    void fsync(int fd, const stdfs::path& path);
    // syncfs(2) on the filesystem holding `path`: one flush for many renames.
    void sync_filesystem(const stdfs::path& path);
    // What one change put in place made durable, and nothing else: each regular file's data
    // (fdatasync, their writeback started together first) and each directory's entries (fsync).
    // A syncfs flushes every process's unwritten data on that filesystem too (a training job's
    // checkpoint: seconds); it is kept for more than k_flush_each_limit paths, where one flush
    // costs less than one each. A path no longer a regular file or a directory is skipped: what
    // is there now is not this change's.
    static constexpr std::size_t k_flush_each_limit = 256;
    void flush(const std::vector<stdfs::path>& files, const std::set<stdfs::path>& dirs, const stdfs::path& root);
    // Tests only: at the named point, runs the shell command VENVTX_HOOK=<point>:<command>
    // gives (another process changing the venv at just that moment). "place": a change, restore,
    // rollback or recovery is about to put its paths in place (a removal's files are captured);
    // "recheck": it has put every path in place and is about to check them; "index_open": the
    // store's index is about to be opened; "preview_mount": a preview's private namespace is
    // about to mount its overlay.
    void hook(const char* point) const;

    // A hold's second name (state/state_holds): linkat/unlinkat between directories the caller
    // opened through Confinement, only ever under the store's holds/. Their steps are counted
    // apart from a change's (VENVTX_HOLD_FAILPOINT, VENVTX_HOLD_FAULT), so the sweeps of a change
    // keep their numbering. False with errno set where the call fails: the caller decides.
    bool hold_link(int from_dir, const char* from, int to_dir, const char* to);
    // A hold that is a copy, where no link can be made: a reflink (FICLONE, no byte copied) where
    // the filesystem has them, else with `bytes_too` the bytes copied; named `to` only once whole.
    bool hold_copy(int from_dir, const char* from, int to_dir, const char* to, bool bytes_too);
    bool hold_unlink(int dir, const char* name);

private:
    Fs();
    // Counts one mutating step; may kill the process or fail it per the failpoint settings.
    void step(const char* op, const stdfs::path& path);

    Failpoints m_change;
    Failpoints m_hold;
    std::string m_hook_point;
    std::string m_hook_command;
};

} // namespace venvtx
