// keep_reserve and release_reserve: best effort through the fs seam.
#include "venvtx/store/space_reserve.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>

namespace venvtx {

namespace {

std::filesystem::path reserve_path(const std::filesystem::path& store_root) {
    return store_root / "reserve";
}

} // namespace

void keep_reserve(const std::filesystem::path& store_root) {
    std::filesystem::path path = reserve_path(store_root);
    struct stat st {};
    if (Confinement::instance().stat_node(path, st)) {
        return;
    }
    try {
        UniqueFd fd = Fs::instance().create_file(path, 0600);
        if (::posix_fallocate(fd.get(), 0, static_cast<off_t>(k_reserve_bytes)) != 0) {
            Fs::instance().unlink(path); // no room for it now: tried again by the next command
        }
    } catch (const FsError&) {
        // no room, or a fault: the next command tries again
    }
}

void release_reserve(const std::filesystem::path& store_root) {
    try {
        Fs::instance().unlink(reserve_path(store_root));
    } catch (const FsError&) {
        // none kept
    }
}

} // namespace venvtx
