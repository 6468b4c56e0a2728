// keep_private: copy beside, rename over, one lstat.
#include "venvtx/capture/private_copy.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"

#include <cerrno>
#include <sys/stat.h>

namespace venvtx {

InodeKey keep_private(const std::filesystem::path& staged, std::optional<mode_t> mode, bool may_share) {
    struct stat st {};
    bool found = Confinement::instance().stat_node(staged, st);
    if (found && st.st_nlink > 1 && !may_share) {
        std::filesystem::path copy = staged.string() + ".private";
        Fs::instance().copy_file(staged, copy, mode.value_or(st.st_mode & 07777));
        Fs::instance().rename(copy, staged);
        found = Confinement::instance().stat_node(staged, st);
    }
    if (!found) {
        throw FsError("stat " + staged.string() + ": vanished from staging", ENOENT);
    }
    return inode_key_of(st);
}

} // namespace venvtx
