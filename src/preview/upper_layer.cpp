// read_upper_layer: whiteouts, opaque directories and new nodes, against the live venv.
#include "venvtx/preview/upper_layer.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"
#include "venvtx/core/sha256.hpp"
#include "venvtx/core/unique_fd.hpp"

#include <cerrno>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

// The upper layer lies in the store (or a what-if's private directory), a directory whose
// owner may not be whoever runs venvtx: it is read beneath its root, never through a symlink.
std::vector<std::string> upper_names(const stdfs::path& dir) {
    UniqueFd fd = Confinement::instance().open_dir(dir);
    DIR* handle = ::fdopendir(fd.get());
    if (handle == nullptr) {
        throw system_error("read the preview layer " + dir.string(), errno);
    }
    fd.release(); // closedir closes it
    std::vector<std::string> names;
    while (const dirent* entry = ::readdir(handle)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") {
            names.push_back(name);
        }
    }
    ::closedir(handle);
    return names;
}

bool layer_stat(const stdfs::path& path, struct stat& st) {
    return Confinement::instance().stat_node(path, st);
}

bool is_whiteout(const struct stat& st) {
    return S_ISCHR(st.st_mode) && st.st_rdev == makedev(0, 0);
}

// trusted.* as root, user.* where the overlay was mounted with userxattr (a user namespace).
bool is_opaque(const UniqueFd& fd) {
    for (const char* name : {"trusted.overlay.opaque", "user.overlay.opaque"}) {
        char value[4] = {};
        ssize_t n = ::fgetxattr(fd.get(), name, value, sizeof value);
        if (n == 1 && value[0] == 'y') {
            return true;
        }
    }
    return false;
}

// A redirect left in the layer (preview/renamed_dirs settles them before it is read): its
// content is not in the layer, so no plan is made from it.
void refuse_redirect(const UniqueFd& fd, const std::string& rel) {
    for (const char* name : {"trusted.overlay.redirect", "user.overlay.redirect"}) {
        if (::fgetxattr(fd.get(), name, nullptr, 0) >= 0) {
            throw Error(ExitCode::internal, "the command renamed the venv's " + rel +
                                                " in its view, and the layer still points at its old place (nothing changed)");
        }
    }
}

class LayerReader {
public:
    LayerReader(const stdfs::path& upper, const VenvLayout& layout, const std::set<std::string>& hidden)
        : m_upper(upper), m_layout(layout), m_hidden(hidden) {}

    std::vector<Entry> read() {
        struct stat st {};
        if (layer_stat(m_upper, st)) {
            open_up(m_upper, st);
        }
        walk_upper("", false);
        hash_new_files();
        return std::move(m_entries);
    }

private:
    static std::string join(const std::string& dir, const std::string& name) {
        return dir.empty() ? name : dir + "/" + name;
    }

    // A directory the command closed (`chmod -R a-w`) is opened once its mode is read: the
    // layer is read through it and the apply moves entries out of it.
    static void open_up(const stdfs::path& dir, const struct stat& st) {
        if (S_ISDIR(st.st_mode) && (st.st_mode & S_IRWXU) != S_IRWXU) {
            Fs::instance().chmod(dir, (st.st_mode & 07777) | S_IRWXU); // the layer is in the store, a root
        }
    }

    // `opaque`: below an opaque directory, where nothing of the live venv shows through: a
    // directory made there carries no mark of its own.
    void walk_upper(const std::string& dir, bool opaque) {
        for (const auto& name : upper_names(m_upper / dir)) {
            std::string rel = join(dir, name);
            if (m_hidden.count(rel) == 0) {
                read_node(rel, opaque);
            }
        }
    }

    void read_node(const std::string& rel, bool opaque_above) {
        stdfs::path layered = m_upper / rel;
        struct stat st {};
        if (!layer_stat(layered, st)) {
            throw system_error("read the preview layer " + layered.string(), errno);
        }
        NodeState live = observe_node(m_layout.root / rel);
        if (is_whiteout(st)) {
            remove_live(rel, live);
            return;
        }
        NodeState after = node_from_stat(layered, st);
        if (after.type == NodeType::dir) {
            open_up(layered, st);
            UniqueFd dir = Confinement::instance().open_dir(layered);
            refuse_redirect(dir, rel);
            bool opaque = opaque_above || is_opaque(dir);
            if (live.type == NodeType::dir) {
                if (opaque) {
                    drop_live_children(rel, layered);
                }
                if (live.mode != after.mode) {
                    add(rel, live, after);
                }
            } else {
                add(rel, live, after);
            }
            walk_upper(rel, opaque);
            return;
        }
        if (live.type == NodeType::dir) {
            drop_live_children(rel, "");
        }
        add(rel, live, after);
    }

    // Every live child of `rel` that the layer's directory `layered` does not hold ("" for none).
    void drop_live_children(const std::string& rel, const stdfs::path& layered) {
        // A live directory (every caller checked), reached without following symlinks.
        for (const auto& name : Confinement::instance().names_in(m_layout.root / rel)) {
            struct stat st {};
            if (!layered.empty() && layer_stat(layered / name, st)) {
                continue;
            }
            std::string child = join(rel, name);
            if (m_hidden.count(child) == 0) {
                remove_live(child, observe_node(m_layout.root / child));
            }
        }
    }

    void remove_live(const std::string& rel, const NodeState& live) {
        if (live.type == NodeType::absent) {
            return;
        }
        if (live.type == NodeType::dir) {
            drop_live_children(rel, "");
        }
        add(rel, live, NodeState{});
    }

    void add(const std::string& rel, const NodeState& before, const NodeState& after) {
        Entry entry;
        entry.path = rel;
        entry.before = before;
        entry.after = after;
        m_entries.push_back(std::move(entry));
    }

    void hash_new_files() {
        std::vector<stdfs::path> paths;
        std::vector<Entry*> files;
        for (auto& entry : m_entries) {
            if (entry.after.type == NodeType::file) {
                paths.push_back(m_upper / entry.path);
                files.push_back(&entry);
            }
        }
        std::vector<FileDigest> digests = sha256_files(paths, HashOpen::confined);
        for (std::size_t i = 0; i < files.size(); ++i) {
            files[i]->after.object = digests[i].hex;
            files[i]->after.size = digests[i].size;
        }
    }

    const stdfs::path& m_upper;
    const VenvLayout& m_layout;
    const std::set<std::string>& m_hidden;
    std::vector<Entry> m_entries;
};

} // namespace

std::vector<Entry> read_upper_layer(const std::filesystem::path& upper, const VenvLayout& layout,
                                    const std::set<std::string>& hidden) {
    return LayerReader(upper, layout, hidden).read();
}

} // namespace venvtx
