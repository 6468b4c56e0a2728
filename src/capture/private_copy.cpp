// keep_private: copy beside, rename over, one lstat.
#include "venvtx/capture/private_copy.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"

#include <cerrno>
#include <sys/stat.h>

namespace venvtx {

KeptFile keep_private(const std::filesystem::path& staged, std::optional<mode_t> mode, bool may_share,
                      const std::filesystem::path& hold) {
    struct stat st {};
    bool found = Confinement::instance().stat_node(staged, st);
    struct stat held {};
    bool is_held = found && st.st_nlink == 2 && !hold.empty() && Confinement::instance().stat_node(hold, held) &&
                   held.st_ino == st.st_ino && held.st_dev == st.st_dev;
    bool copying = found && st.st_nlink > 1 && !may_share && !is_held;
    if (copying) {
        std::filesystem::path copy = staged.string() + ".private";
        Fs::instance().copy_file(staged, copy, mode.value_or(st.st_mode & 07777));
        Fs::instance().rename(copy, staged);
        found = Confinement::instance().stat_node(staged, st);
    }
    if (!found) {
        throw FsError("stat " + staged.string() + ": vanished from staging", ENOENT);
    }
    return {inode_key_of(st), copying};
}

} // namespace venvtx
