// snapshot_venv: one lstat per path, directories walked without following symlinks.
#include "venvtx/capture/snapshot.hpp"

#include "venvtx/core/error.hpp"

#include <cerrno>
#include <dirent.h>
#include <sys/stat.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

class Walker {
public:
    Walker(const VenvLayout& layout, const stdfs::path& store_root, VenvSnapshot& snapshot)
        : m_root(layout.root), m_store(store_root), m_snapshot(snapshot) {}

    void walk(const stdfs::path& dir, const std::string& rel_dir) {
        DIR* handle = ::opendir(dir.c_str());
        if (!handle) {
            throw system_error("open directory " + dir.string(), errno);
        }
        std::vector<std::string> names;
        while (dirent* entry = ::readdir(handle)) {
            std::string name = entry->d_name;
            if (name != "." && name != "..") {
                names.push_back(name);
            }
        }
        ::closedir(handle);
        for (const auto& name : names) {
            stdfs::path path = dir / name;
            std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
            if ((rel_dir.empty() && name == ".lock") || path == m_store) {
                continue; // venvtx's own files, and the lock uv shares
            }
            struct stat st {};
            if (::lstat(path.c_str(), &st) != 0) {
                continue; // gone since readdir
            }
            NodeState state = node_from_stat(path, st);
            if (state.type == NodeType::file) {
                m_snapshot.inodes[rel] = {st.st_dev, st.st_ino, st.st_nlink};
            }
            m_snapshot.states[rel] = state;
            if (state.type == NodeType::dir) {
                walk(path, rel);
            }
        }
    }

private:
    stdfs::path m_root;
    stdfs::path m_store;
    VenvSnapshot& m_snapshot;
};

} // namespace

VenvSnapshot snapshot_venv(const VenvLayout& layout, const stdfs::path& store_root) {
    VenvSnapshot snapshot;
    Walker(layout, store_root, snapshot).walk(layout.root, "");
    return snapshot;
}

VenvSnapshot snapshot_below(const VenvLayout& layout, const std::string& rel_dir, const stdfs::path& store_root) {
    VenvSnapshot snapshot;
    Walker(layout, store_root, snapshot).walk(layout.root / rel_dir, rel_dir);
    return snapshot;
}

} // namespace venvtx
