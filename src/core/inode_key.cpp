// inode_key: an lstat reduced to what identifies the inode's current version.
#include "venvtx/core/inode_key.hpp"

#include "venvtx/core/confinement.hpp"

#include <algorithm>
#include <ctime>

namespace venvtx {

namespace {

std::int64_t nanoseconds(const struct timespec& at) {
    return static_cast<std::int64_t>(at.tv_sec) * 1000000000 + at.tv_nsec;
}

} // namespace

InodeKey inode_key_of(const struct stat& st) {
    return {static_cast<std::int64_t>(st.st_dev), static_cast<std::int64_t>(st.st_ino),
            static_cast<std::int64_t>(st.st_size), nanoseconds(st.st_mtim), nanoseconds(st.st_ctim)};
}

bool settled(const InodeKey& key) {
    constexpr std::int64_t k_settle_ns = 2'000'000'000;
    struct timespec now {};
    ::clock_gettime(CLOCK_REALTIME, &now);
    return std::max(key.mtime_ns, key.ctime_ns) < nanoseconds(now) - k_settle_ns;
}

std::optional<InodeKey> inode_key(const std::filesystem::path& path) {
    struct stat st {};
    if (!Confinement::instance().stat_node(path, st) || !S_ISREG(st.st_mode)) {
        return std::nullopt;
    }
    return inode_key_of(st);
}

} // namespace venvtx
