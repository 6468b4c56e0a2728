// Object inode keys: written after an adoption, compared before a restore.
#include "venvtx/store/object_keys.hpp"

#include "venvtx/core/inode_key.hpp"

#include <sys/stat.h>

namespace venvtx {

namespace {

std::optional<InodeKey> key_of_object(Store& store, const std::string& hex) {
    struct stat st {};
    if (::lstat(store.objects().object_path(hex).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        return std::nullopt;
    }
    return inode_key_of(st);
}

} // namespace

void record_object_keys(Store& store, const std::vector<std::string>& hexes) {
    SqlTransaction transaction(store.db());
    Statement update =
        store.db().prepare("UPDATE objects SET dev = ?, ino = ?, mtime_ns = ?, ctime_ns = ? WHERE sha256 = ? AND size = ?");
    for (const auto& hex : hexes) {
        if (auto key = key_of_object(store, hex)) {
            update.bind(1, key->dev).bind(2, key->ino).bind(3, key->mtime_ns).bind(4, key->ctime_ns);
            update.bind(5, hex).bind(6, key->size).run();
        }
    }
    transaction.commit();
}

std::set<std::string> unchanged_objects(Store& store, const std::set<std::string>& hexes) {
    std::set<std::string> unchanged;
    Statement query = store.db().prepare(
        "SELECT dev, ino, size, mtime_ns, ctime_ns FROM objects WHERE sha256 = ? AND ino IS NOT NULL");
    for (const auto& hex : hexes) {
        query.bind(1, hex);
        if (query.step()) {
            InodeKey recorded{query.integer(0), query.integer(1), query.integer(2), query.integer(3), query.integer(4)};
            if (key_of_object(store, hex) == recorded) {
                unchanged.insert(hex);
            }
        }
        query.reset();
    }
    return unchanged;
}

} // namespace venvtx
