// Store: opening the index and object directories of a venv's store.
#include "venvtx/store/store.hpp"

#include "venvtx/core/fs.hpp"

namespace venvtx {

namespace stdfs = std::filesystem;

namespace {

std::unique_ptr<Database> open_index(const stdfs::path& root, bool create) {
    if (create) {
        Fs::instance().mkdirs(root / "objects");
        Fs::instance().mkdirs(root / "staging");
    }
    return std::make_unique<Database>(root / "index.sqlite");
}

} // namespace

Store::Store(stdfs::path root, bool create)
    : m_root(std::move(root)), m_db(open_index(m_root, create)), m_history(*m_db), m_objects(m_root) {}

bool Store::exists(const stdfs::path& root) {
    std::error_code ec;
    return stdfs::exists(root / "index.sqlite", ec);
}

MutationLock::MutationLock(const stdfs::path& store_root, const stdfs::path& venv_root,
                           std::optional<double> wait_s)
    : m_venv(venv_root / ".lock", wait_s, "the venv"), m_store(store_root / "lock", wait_s, "the store") {}

} // namespace venvtx
