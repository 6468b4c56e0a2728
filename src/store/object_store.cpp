// ObjectStore: naming, adoption and verification of content-addressed objects.
#include "venvtx/store/object_store.hpp"

#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"

#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

ObjectStore::ObjectStore(stdfs::path root) : m_root(std::move(root)) {}

stdfs::path ObjectStore::object_path(const std::string& hex) const {
    if (hex.size() != 64) {
        throw Error(ExitCode::internal, "no stored content (object name '" + hex + "')");
    }
    return m_root / "objects" / hex.substr(0, 2) / hex.substr(2);
}

stdfs::path ObjectStore::staging_dir(std::int64_t tx) const {
    return m_root / "staging" / std::to_string(tx);
}

bool ObjectStore::has(const std::string& hex) const {
    if (hex.size() != 64) {
        return false;
    }
    struct stat st {};
    return ::lstat(object_path(hex).c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool ObjectStore::adopt(const stdfs::path& staged, const std::string& hex) {
    // The staged file hashes to `hex` by construction: it replaces whatever is stored under that
    // name, so a stored copy that rotted is healed rather than trusted.
    bool existed = has(hex);
    stdfs::path target = object_path(hex);
    if (m_made_dirs.insert(target.parent_path().string()).second) { // we hold the lock: it stays
        Fs::instance().mkdirs(target.parent_path());
    }
    Fs::instance().move(staged, target, 0444);
    return !existed;
}

void ObjectStore::verify(const std::string& hex) const {
    stdfs::path path = object_path(hex);
    if (!has(hex)) {
        throw Error(ExitCode::verify_failed, "store object " + hex + " is missing (" + path.string() + ")");
    }
    FileDigest digest = sha256_file(path);
    if (digest.hex != hex) {
        throw Error(ExitCode::verify_failed, "store object " + hex + " is corrupted: its bytes now hash to " +
                                            digest.hex + " (" + path.string() + ")");
    }
}

} // namespace venvtx
