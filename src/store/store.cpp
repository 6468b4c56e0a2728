// Store: opening the index and object directories of a venv's store.
#include "venvtx/store/store.hpp"

#include "venvtx/core/confinement.hpp"
#include "venvtx/core/error.hpp"
#include "venvtx/core/fs.hpp"

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

bool has_entries(const stdfs::path& dir) {
    std::error_code ec;
    return stdfs::directory_iterator(dir, ec) != stdfs::directory_iterator();
}

// A store's own name is never followed: the venv's owner may have put a link there for root to
// follow. A store elsewhere is named as such (--store DIR), and resolved once.
void refuse_symlinked_store(const stdfs::path& root) {
    std::error_code ec;
    if (stdfs::is_symlink(root, ec)) {
        throw Error(ExitCode::locked, "the store " + root.string() +
                                          " is a symbolic link, which venvtx does not follow (a store elsewhere: "
                                          "--store DIR)");
    }
}

// An index that is gone or empty beside stored objects is a lost history, never a new one:
// starting afresh would orphan every object and make every transaction impossible to undo.
void refuse_lost_index(const stdfs::path& root) {
    std::error_code ec;
    stdfs::path index = root / "index.sqlite";
    bool empty = !stdfs::exists(index, ec) || stdfs::file_size(index, ec) == 0;
    if (!empty) {
        return;
    }
    for (const char* dir : {"objects", "staging"}) {
        if (has_entries(root / dir)) {
            throw Error(ExitCode::locked, "the store's index " + index.string() + " is " +
                                              (stdfs::exists(index, ec) ? "empty" : "missing") + " but " +
                                              (root / dir).string() +
                                              " holds data: refusing to start a new history over it "
                                              "(restore the index, or move the store away)");
        }
    }
}

// The store's directory is opened as every path venvtx changes is (beneath its root, no symlink
// followed), and SQLite reaches the index through that very descriptor.
std::unique_ptr<Database> open_index(const stdfs::path& root, bool create) {
    refuse_symlinked_store(root);
    refuse_lost_index(root);
    if (create) {
        Fs::instance().mkdirs(root / "objects");
        Fs::instance().mkdirs(root / "staging");
    }
    UniqueFd directory = Confinement::instance().open_dir(root);
    Fs::instance().hook("index_open");
    return std::make_unique<Database>(std::move(directory), "index.sqlite", root / "index.sqlite");
}

} // namespace

Store::Store(stdfs::path root, bool create)
    : m_root(std::move(root)), m_db(open_index(m_root, create)), m_history(*m_db), m_objects(m_root) {}

void Store::require_writable() {
    if (m_db->read_only()) {
        throw Error(ExitCode::locked, "the store " + m_root.string() +
                                          " is read-only for this user: only its owner can change this venv "
                                          "through it (log, show, verify and why only read it)");
    }
}

bool Store::exists(const stdfs::path& root) {
    refuse_symlinked_store(root);
    refuse_lost_index(root);
    std::error_code ec;
    return stdfs::exists(root / "index.sqlite", ec);
}

MutationLock::MutationLock(const stdfs::path& store_root, const stdfs::path& venv_root,
                           std::optional<double> wait_s)
    : m_venv(venv_root / ".lock", wait_s, "the venv"), m_store(store_root / "lock", wait_s, "the store") {}

} // namespace venvtx
